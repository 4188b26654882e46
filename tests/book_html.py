"""Browses the pages of `xqz book export --format html` in headless Chromium.

Usage: book_html.py DIR CHROMIUM CHROMEDRIVER [--screenshot PNG]

Loads DIR/index.html, checks the board (an inline SVG with the 32 pieces of the start position),
the move list (Chinese notation, linked), that nothing is loaded from elsewhere, then follows the
first move's link and checks that the new page's board differs and its line names the move.
With --screenshot, saves the start page as a PNG (docs/book-start.png is made this way, with
Debian's fonts-wqy-zenhei installed: without a CJK font the Chinese text renders as boxes).
Prints "ok" when every check passes.
"""

import argparse
import pathlib
import re

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# A piece (after 前/中/后 or a pawn's ordinal where two share a file), its file unless tagged, the
# action and the target file or distance: 炮二平五, 马8进7, 前马退四, 二兵平五.
CHINESE_MOVE = re.compile(r"^[前中后一二三四五1-5]?[帅仕相马车炮兵将士象卒][一二三四五六七八九1-9]?[进退平][一二三四五六七八九1-9]$")


def browser(chromium, chromedriver):
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir", type=pathlib.Path)
    parser.add_argument("chromium")
    parser.add_argument("chromedriver")
    parser.add_argument("--screenshot", type=pathlib.Path)
    args = parser.parse_args()
    driver = browser(args.chromium, args.chromedriver)
    try:
        start = (args.dir / "index.html").resolve().as_uri()
        driver.get(start)
        board = driver.find_element(By.CSS_SELECTOR, "svg#board")
        pieces = board.find_elements(By.CSS_SELECTOR, "g.piece")
        assert len(pieces) == 32, f"{len(pieces)} pieces on the start board"
        assert {p.text for p in pieces} >= {"帅", "将", "车", "炮", "兵", "卒"}, [p.text for p in pieces]
        rows = driver.find_elements(By.CSS_SELECTOR, "table#moves tbody tr")
        links = driver.find_elements(By.CSS_SELECTOR, "table#moves td.move a")
        assert rows and links, "no moves listed, or none linked"
        for link in links:
            assert CHINESE_MOVE.match(link.text), f"{link.text!r} is not a move in Chinese notation"
        # Self-contained: every link is to another page of the export, nothing is fetched.
        for element in driver.find_elements(By.CSS_SELECTOR, "[src], link[href], script"):
            raise AssertionError(f"an external resource: {element.get_attribute('outerHTML')[:200]}")
        for a in driver.find_elements(By.TAG_NAME, "a"):
            href = a.get_attribute("href")
            assert href.startswith("file://") and href.endswith(".html"), href
        if args.screenshot:
            driver.save_screenshot(str(args.screenshot))

        before = board.get_attribute("outerHTML")
        move = links[0].text
        links[0].click()
        WebDriverWait(driver, 10).until(lambda d: d.current_url != start)
        after = driver.find_element(By.CSS_SELECTOR, "svg#board").get_attribute("outerHTML")
        assert after != before, "the child position's board is the start position's"
        line = driver.find_element(By.ID, "line").text
        assert line.endswith(move), f"the line {line!r} does not end with {move}"
        # One move from the start: every piece is still there, or one was taken.
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg#board g.piece")) in (31, 32)
        assert driver.find_elements(By.CSS_SELECTOR, "svg#board circle.from"), "the last move is not marked"
        print("ok")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
