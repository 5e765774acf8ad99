"""The README's playground screenshot: ``python docs/screenshot_playground.py [BASE_URL] [OUT]``.

Drives Debian's chromium (selenium) against a running server (``make serve``): a search, a pair
comparison and the map of the default index, then saves the page as a PNG.
"""

import shutil
import sys

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

base = sys.argv[1] if len(sys.argv) > 1 else "http://localhost:8000"
out = sys.argv[2] if len(sys.argv) > 2 else "docs/playground.png"
opts = webdriver.ChromeOptions()
opts.binary_location = shutil.which("chromium")
for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1150,1250", "--hide-scrollbars"):
    opts.add_argument(arg)
browser = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")))
try:
    browser.get(base + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#index option"))
    browser.find_element(By.ID, "search-btn").click()
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#results li.hit"))
    browser.find_element(By.ID, "compare-btn").click()
    wait.until(lambda b: "cosine" in b.find_element(By.ID, "pair-score").text)
    browser.find_element(By.ID, "map-btn").click()
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#map path.query"))
    browser.save_screenshot(out)
    print(out)
finally:
    browser.quit()
