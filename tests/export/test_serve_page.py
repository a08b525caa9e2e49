"""The translation page in headless Chromium, over the session's export.

Debian's `chromium` and `chromium-driver` drive it (`.ci/run` installs
them); the helpers are `benchmarks/page_completion.py`'s. The reversal
model's last layer aligns word j with the mirrored source word, which the
hover test relies on.
"""

import os

import numpy as np
import pytest
from selenium.webdriver import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from keras_transformer.serving import RequestLimits, ServedModel
from tests.fixtures.benchmark_scripts import benchmark_module

pytestmark = pytest.mark.slow
page_completion = benchmark_module("page_completion")
if not all(
    os.path.exists(p) for p in (page_completion.CHROMIUM, page_completion.CHROMEDRIVER)
):
    pytest.skip(
        "needs Debian's chromium and chromium-driver (apt-get install chromium "
        "chromium-driver), as .ci/run installs them",
        allow_module_level=True,
    )
MAX_CHARACTERS = 60


@pytest.fixture(scope="module")
def page(exported):
    """(a Chromium driver, the page's URL), the server on the export."""
    model = ServedModel(exported)
    limits = RequestLimits(max_characters=MAX_CHARACTERS)
    driver = page_completion.chromium()
    try:
        with page_completion.PageServer(model, limits) as url:
            yield driver, url
    finally:
        driver.quit()


def fresh(page):
    driver, url = page
    page_completion.open_page(driver, url)
    return driver


def as_alone(reloaded, sources, required=None):
    """The export's `controlled` translations, neutral but for `required`."""
    required = required or [[""]] * len(sources)
    count = len(sources)
    outputs = reloaded.signatures["controlled"](
        text=np.array(sources, object),
        prefix=np.array([""] * count, object),
        repetition_penalty=np.ones(count, np.float32),
        no_repeat_ngram_size=np.zeros(count, np.int32),
        min_length=np.zeros(count, np.int32),
        disable_unk=np.zeros(count, bool),
        banned=np.full((count, 1), b"", object),
        required=np.array(required, object),
    )
    return [text.decode() for text in outputs["translation"].numpy()]


def test_typed_text_is_translated_sentence_by_sentence(page, reloaded):
    driver = fresh(page)
    sources = ["a b c d", "e f g", "h i j k l"]
    translations = page_completion.translate(driver, "\n".join(sources))
    assert translations == as_alone(reloaded, sources)
    assert driver.find_element(By.ID, "progress-text").text == "3 of 3 sentences"


def test_a_typed_start_is_kept_and_the_rest_completed(page):
    driver = fresh(page)
    page_completion.translate(driver, "a b c d e")
    completion, _ = page_completion.complete(driver, 0, "p o")
    assert completion.startswith("p o") and len(completion.split()) > 2


def test_a_glossary_term_is_used_and_shown_as_used(page, reloaded):
    driver = fresh(page)
    driver.find_element(By.CSS_SELECTOR, ".term-source").send_keys("b")
    driver.find_element(By.CSS_SELECTOR, ".term-target").send_keys("k")
    [translation] = page_completion.translate(driver, "a b c")
    assert translation == as_alone(reloaded, ["a b c"], [["k"]])[0]
    assert "k" in translation.split()
    assert driver.find_element(By.CSS_SELECTOR, ".term.used").text == "b → k: used"


def test_hovering_a_word_lights_its_source_words(page):
    driver = fresh(page)
    page_completion.translate(driver, "a b c d e f")
    target = driver.find_elements(By.CSS_SELECTOR, ".target-words .word")
    for index in (0, 2):
        ActionChains(driver).move_to_element(target[index]).perform()
        lit = driver.find_elements(By.CSS_SELECTOR, ".source-words .word.lit")
        assert [int(word.get_attribute("data-index")) for word in lit] == [5 - index]


def test_alternatives_are_taken_in_one_click_and_the_map_is_drawn(page):
    driver = fresh(page)
    page_completion.translate(driver, "a b c d")
    driver.find_element(By.CSS_SELECTOR, ".alternatives").click()
    wait = WebDriverWait(driver, 120)
    choices = wait.until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".alternative-list button")
    )
    chosen = choices[-1].text
    choices[-1].click()
    box = driver.find_element(By.CSS_SELECTOR, ".target-edit")
    wait.until(lambda d: box.get_attribute("value") == chosen)
    driver.find_element(By.CSS_SELECTOR, ".attention").click()
    canvas = wait.until(
        lambda d: (
            d.find_element(By.CSS_SELECTOR, ".attention-map").is_displayed()
            and d.find_element(By.CSS_SELECTOR, ".attention-map")
        )
    )
    assert int(canvas.get_attribute("height")) > 0


def test_a_refused_input_shows_the_server_error_as_text(page):
    driver = fresh(page)
    with pytest.raises(RuntimeError, match=f"{MAX_CHARACTERS} at most"):
        page_completion.translate(driver, "a " * MAX_CHARACTERS)
    assert driver.find_element(By.ID, "error").is_displayed()
