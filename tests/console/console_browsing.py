"""What the browser tests do on a page: open it (and keep a screenshot), read a table
or a figure as the page shows it."""

from __future__ import annotations

from typing import Any

from console_scene import screenshot


def open_page(browser: Any, url: str, name: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.CSS_SELECTOR, "main h1")))
    assert "Cluster unavailable" not in browser.find_element(By.TAG_NAME, "h1").text, (
        browser.find_element(By.TAG_NAME, "main").text
    )
    screenshot(browser, name)


def table_text(browser: Any, table_id: str) -> list[list[str]]:
    """A table's cells exactly as shown (thousands separators and all)."""
    from selenium.webdriver.common.by import By

    rows = browser.find_elements(By.CSS_SELECTOR, f"table#{table_id} tbody tr")
    return [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def table(browser: Any, table_id: str) -> list[list[str]]:
    """A table's cells with thousands separators taken out, to compare figures."""
    return [[text.replace(",", "") for text in row] for row in table_text(browser, table_id)]


def figure(browser: Any, name: str) -> str:
    from selenium.webdriver.common.by import By

    text: str = browser.find_element(By.CSS_SELECTOR, f'[data-figure="{name}"] b').text
    return text.replace(",", "")


def nav_links(browser: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [a.text for a in browser.find_elements(By.CSS_SELECTOR, "header nav a")]


def wait_for(browser: Any, css: str, timeout: float = 20) -> Any:
    """The element ``css`` names, once the page that a click or a submit loads has it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, css))
    )
