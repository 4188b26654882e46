"""The Matches view of a coordinator's dashboard in headless Chromium (selenium and chromedriver).

Usage: dashboard_matches.py URL CHROMIUM CHROMEDRIVER MATCH STATE [--screenshots DIR] [--timeout SECONDS]

Opens URL#matches and waits until the row of match MATCH shows state STATE with its games, W/D/L,
pair counts, Elo and LLR filled in; then the training view, whose table of models against anchors
must list at least one model. With --screenshots, also saves matches.png into DIR. Prints "ok"
when all checks pass.
"""

import argparse
import os
import sys

from selenium.webdriver.common.by import By

from dashboard_browser import start, wait_for


def main():
    parser = argparse.ArgumentParser()
    for name in ["url", "chromium", "chromedriver", "match", "state"]:
        parser.add_argument(name)
    parser.add_argument("--screenshots")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()

    driver = start(args.chromium, args.chromedriver)
    try:
        driver.get(args.url.split("#")[0] + "#matches")

        def the_row():
            row = driver.find_element(By.CSS_SELECTOR, f'#matches tr[data-match="{args.match}"]')
            return row if row.get_attribute("data-state") == args.state else None

        row = wait_for(f"match {args.match} in state {args.state}", the_row, args.timeout)
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert cells[2].startswith(args.state), cells
        played, _, pairs = cells[3].partition(" / ")
        assert int(played.replace(",", "")) > 0 and int(pairs.replace(",", "")) >= int(played.replace(",", "")), cells
        wins, draws, losses = (int(x) for x in cells[4].split(" / "))
        assert wins + draws + losses == int(played.replace(",", "")), cells
        pentanomial = [int(x) for x in cells[5].split()]
        assert len(pentanomial) == 5 and 2 * sum(pentanomial) == wins + draws + losses, cells
        assert cells[6] != "–" and cells[7].startswith("["), cells
        assert cells[8] == "–" or "[" in cells[8], cells
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            driver.save_screenshot(os.path.join(args.screenshots, "matches.png"))

        driver.get(args.url.split("#")[0] + "#training")

        def anchored():
            rows = driver.find_elements(By.CSS_SELECTOR, "#anchored tbody tr")
            cells = [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows]
            return [c for c in cells if len(c) == 6 and c[0].startswith("v")]

        rows = wait_for("a model against an anchor on the training view", anchored, args.timeout)
        model, anchor, _, wdl, _, interval = rows[0]
        assert model.startswith("v") and "@" in anchor and wdl.count("/") == 2 and interval.startswith("["), rows
        print("ok")
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
