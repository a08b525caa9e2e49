"""The translation page in a real browser: how long a completion takes.

Serves an export with `keras-transformer serve`'s application (uvicorn on
a thread of this process, batching on), opens the page in headless
Chromium (Debian's `chromium` and `chromium-driver`, driven by Selenium),
pastes `--sentences` lines of `--texts` and translates them. Then, in each
translated sentence, it types the first `--typed` characters of the
translation over it, as a translator starts a sentence, and times the
page from the last keystroke to the completed sentence in the box (the
page's pause before asking, `COMPLETION_DELAY_MS` in page.js, included).
Every completion must begin with what was typed.

    python benchmarks/page_completion.py saved_models/translator/1 \\
        --texts test.en --screenshot docs/images/translation-page.png

Prints one JSON object on stdout.
"""

import argparse
import json
import os
import socket
import statistics
import threading
import time

import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from keras_transformer.serving import (
    BatchingParameters,
    RequestLimits,
    ServedModel,
    create_app,
)

CHROMIUM = "/usr/bin/chromium"  # Debian's packages, as .ci/run installs them
CHROMEDRIVER = "/usr/bin/chromedriver"


class PageServer:
    """`create_app(model)` served by uvicorn on a thread, on a free port.

    A context manager: `with PageServer(model) as url: ...`.
    """

    def __init__(self, model, limits=None):
        app = create_app(model, BatchingParameters(True), limits or RequestLimits())
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("The server did not start.")
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}/"

    def __exit__(self, *exception):
        self.server.should_exit = True
        self.thread.join(timeout=30)


def chromium(width=1200, height=900):
    """A headless Chromium driven by chromedriver, nothing downloaded."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def open_page(driver, url, timeout=60):
    """Loads the page and waits until it has its settings."""
    driver.get(url)
    WebDriverWait(driver, timeout).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
    )


def translate(driver, text, timeout=600):
    """Pastes `text`, clicks Translate: the translations' boxes' texts."""
    source = driver.find_element(By.ID, "source")
    source.clear()
    source.send_keys(text)
    driver.find_element(By.ID, "translate").click()
    expected = len([line for line in text.split("\n") if line.strip()])

    def done(d):
        if d.find_element(By.ID, "error").is_displayed():
            raise RuntimeError(d.find_element(By.ID, "error").text)
        boxes = d.find_elements(By.CSS_SELECTOR, ".target-edit")
        values = [box.get_attribute("value") for box in boxes]
        return values if len(values) >= expected and all(values) else False

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(done)


def complete(driver, index, typed, timeout=120):
    """Types `typed` over sentence `index`'s translation: (the completion,
    seconds from the last keystroke to it)."""
    sentence = driver.find_elements(By.CSS_SELECTOR, ".sentence")[index]
    before = sentence.get_attribute("data-completions") or "0"
    box = sentence.find_element(By.CSS_SELECTOR, ".target-edit")
    box.clear()
    box.send_keys(typed)
    started = time.perf_counter()

    def completed(d):
        return (sentence.get_attribute("data-completions") or "0") != before

    WebDriverWait(driver, timeout, poll_frequency=0.01).until(completed)
    return box.get_attribute("value"), time.perf_counter() - started


def screenshot(driver, path):
    """The first sentence's alternatives and attention map shown, its first
    word hovered, the page saved as a PNG."""
    wait = WebDriverWait(driver, 300)
    driver.find_element(By.CSS_SELECTOR, ".alternatives").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".alternative-list button"))
    driver.find_element(By.CSS_SELECTOR, ".attention").click()
    wait.until(
        lambda d: d.find_element(By.CSS_SELECTOR, ".attention-map").is_displayed()
    )
    wait.until(lambda d: not d.find_element(By.CSS_SELECTOR, ".busy").is_displayed())
    word = driver.find_elements(By.CSS_SELECTOR, ".target-words .word")[0]
    webdriver.ActionChains(driver).move_to_element(word).perform()
    time.sleep(1)  # the canvas painted
    driver.save_screenshot(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("saved_model", help="an export's version folder")
    parser.add_argument("--texts", required=True, help="source sentences, one a line")
    parser.add_argument("--sentences", type=int, default=12, help="lines used (12)")
    parser.add_argument("--typed", type=int, default=6, help="characters typed (6)")
    parser.add_argument("--screenshot", default="", help="a PNG of the page at the end")
    args = parser.parse_args(argv)
    with open(args.texts, encoding="utf-8") as file:
        lines = [line.strip() for line in file if line.strip()][: args.sentences]
    model = ServedModel(args.saved_model)
    driver = chromium()
    try:
        with PageServer(model) as url:
            open_page(driver, url)
            started = time.perf_counter()
            translations = translate(driver, "\n".join(lines))
            translated = time.perf_counter() - started
            seconds, kept = [], 0
            for index, translation in enumerate(translations):
                typed = translation[: args.typed]
                value, elapsed = complete(driver, index, typed)
                seconds.append(elapsed)
                kept += value.startswith(typed)
            if args.screenshot:
                screenshot(driver, args.screenshot)
    finally:
        driver.quit()
    ordered = sorted(seconds)
    print(
        json.dumps(
            {
                "benchmark": "page_completion",
                "export": args.saved_model,
                "browser": driver.capabilities.get("browserVersion"),
                "cores": os.cpu_count(),
                "sentences": len(translations),
                "translate_seconds": round(translated, 2),
                "completions": len(seconds),
                "completions_keeping_the_typed_start": kept,
                "completion_seconds": {
                    "median": round(statistics.median(ordered), 3),
                    "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
                    "max": round(ordered[-1], 3),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
