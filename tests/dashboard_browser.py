"""The dashboard of a running `xqz run` in headless Chromium (selenium and chromedriver).

Usage: dashboard_browser.py URL CHROMIUM CHROMEDRIVER [--screenshots DIR] [--timeout SECONDS]

Opens URL (the address `xqz run` prints), sees the stored-games count rise and a model version
appear, opens the latest game and steps through its moves, checking that the board changes and
that the moves are listed in Chinese notation. With --screenshots, also saves overview.png,
games.png and training.png of the views into DIR. Prints "ok" when all checks pass.
"""

import argparse
import os
import re
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1500,1000",
]


def wait_for(what, check, timeout):
    """Polls check() until it returns something true; fails naming `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except Exception as e:  # the page may be between two renders
            last = e
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def start(chromium, chromedriver):
    """Headless Chromium driven through chromedriver."""
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in CHROMIUM_ARGS:
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text.strip()


def count(driver, element_id):
    value = text(driver, element_id).replace(",", "")
    return int(value) if value.isdigit() else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("chromium")
    parser.add_argument("chromedriver")
    parser.add_argument("--screenshots")
    parser.add_argument("--timeout", type=float, default=90)
    args = parser.parse_args()

    driver = start(args.chromium, args.chromedriver)
    try:
        check(driver, args)
    finally:
        driver.quit()
    print("ok")


def check(driver, args):
    driver.get(args.url)
    # The page polls by itself: the counts must move without a reload.
    def games_shown():
        n = count(driver, "games-count")
        return None if n is None else (n,)

    first = wait_for("a game count", games_shown, args.timeout)[0]
    wait_for(f"the game count to rise above {first}", lambda: (count(driver, "games-count") or 0) > first, args.timeout)
    version = wait_for("a model version", lambda: re.fullmatch(r"v\d+", text(driver, "model-version")), args.timeout)
    print(f"games rose from {first} to {count(driver, 'games-count')}; model {version.group(0)}")
    if args.screenshots:
        wait_for("a worker row", lambda: driver.find_elements(By.CSS_SELECTOR, "#workers tbody tr"), args.timeout)
        driver.save_screenshot(os.path.join(args.screenshots, "overview.png"))

    driver.find_element(By.CSS_SELECTOR, 'nav a[data-view="games"]').click()
    row = wait_for("a game in the list",
                   lambda: driver.find_elements(By.CSS_SELECTOR, "#game-list tr.game-row"), args.timeout)[0]
    row.click()
    board = driver.find_element(By.ID, "board")
    start = wait_for("the board", lambda: board.get_attribute("data-fen"), args.timeout)
    assert text(driver, "ply-label").startswith("ply 0 /"), text(driver, "ply-label")
    moves = driver.find_elements(By.CSS_SELECTOR, "#moves .mv")
    assert len(moves) >= 2, f"{len(moves)} moves listed"
    chinese = moves[0].text
    assert re.search(r"[\u4e00-\u9fff]", chinese), f"first move {chinese!r} is not in Chinese notation"
    pieces = len(board.find_elements(By.CSS_SELECTOR, "text.piece"))
    in_fen = sum(c.isalpha() for c in start.split(" ")[0])
    assert pieces == in_fen > 0, f"{pieces} pieces drawn for {start}"

    seen = [start]
    for ply in (1, 2):
        driver.find_element(By.ID, "next").click()
        fen = wait_for(f"the board after ply {ply}", lambda: board.get_attribute("data-fen") != seen[-1] and
                       board.get_attribute("data-fen"), 10)
        assert text(driver, "ply-label").startswith(f"ply {ply} /"), text(driver, "ply-label")
        current = driver.find_element(By.CSS_SELECTOR, "#moves .mv.current")
        assert current.get_attribute("data-ply") == str(ply), current.get_attribute("data-ply")
        seen.append(fen)
    driver.find_element(By.ID, "prev").click()
    wait_for("the board one ply back", lambda: board.get_attribute("data-fen") == seen[1], 10)
    driver.find_element(By.ID, "last").click()
    wait_for("the last position", lambda: text(driver, "ply-label").startswith(f"ply {len(moves)} /"), 10)
    print(f"stepped through {chinese} and on; {len(moves)} plies")
    if args.screenshots:
        driver.find_element(By.ID, "first").click()
        for _ in range(min(12, len(moves))):
            driver.find_element(By.ID, "next").click()
        driver.save_screenshot(os.path.join(args.screenshots, "games.png"))
        driver.find_element(By.CSS_SELECTOR, 'nav a[data-view="training"]').click()
        wait_for("the loss chart", lambda: driver.find_elements(By.CSS_SELECTOR, "#chart-loss polyline"), args.timeout)
        wait_for("the Elo chart", lambda: driver.find_elements(By.CSS_SELECTOR, "#chart-elo circle"), args.timeout)
        driver.save_screenshot(os.path.join(args.screenshots, "training.png"))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
