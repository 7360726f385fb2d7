#!/usr/bin/env python3
"""lcnd's web page (GET /, issue 21) in a real headless browser.

Debian's chromium driven by Selenium (python3-selenium, chromium-driver:
scripts/deps.sh installs them; skipped with a message when they are
missing). A daemon with a token; the page gets the token typed into it,
submits a bundled sample through the form, shows the plot gaining points
and the layout drawn while the job runs, cancels a second job from its
page, and reads a finished job. With LCN_SCREENSHOTS=DIR the list and job
pages are saved there at 1280x800 (docs/img/ holds the committed ones).
"""
import os
import shutil
import time
import unittest

from lcnd_harness import WAIT, Daemon, need_binaries

try:  # Debian's python3-selenium, also when python3 is another interpreter of the same version
    import selenium  # noqa: F401
except ImportError:
    import sys
    sys.path.append("/usr/lib/python3/dist-packages")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
except ImportError:  # pragma: no cover - reported as a skip
    webdriver = None

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
TOKEN = "web-page-token-0123456789"
SHOTS = os.environ.get("LCN_SCREENSHOTS", "")


def until(cond, what, timeout=WAIT):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


class WebPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        if webdriver is None or not os.access(CHROMIUM, os.X_OK) or not os.access(DRIVER, os.X_OK):
            raise unittest.SkipTest("no python3-selenium, chromium or chromium-driver "
                                    "(scripts/deps.sh installs them)")
        cls.d = Daemon(token=TOKEN)
        tf = os.path.join(cls.d.dir, "token")
        with open(tf, "w") as f:
            f.write(TOKEN + "\n")
        cls.d.start(extra=["--token-file", tf, "--cpu-workers", "2"])
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
                  "--disable-dev-shm-usage"):
            opts.add_argument(a)
        cls.b = webdriver.Chrome(service=Service(DRIVER), options=opts)
        # the page's viewport itself 1280x800 (the window's size includes no chrome headless,
        # but say so anyway: the screenshots are of exactly that)
        cls.b.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                              {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        cls.base = "http://" + cls.d.addr + "/"

    @classmethod
    def tearDownClass(cls):
        cls.b.quit()
        cls.d.stop()
        cls.d.cleanup()

    def shot(self, name):
        if SHOTS:
            os.makedirs(SHOTS, exist_ok=True)
            self.b.save_screenshot(os.path.join(SHOTS, name))

    def el(self, css):
        return self.b.find_element(By.CSS_SELECTOR, css)

    def job_id(self):
        return until(lambda: self.b.current_url.split("#/jobs/")[1]
                     if "#/jobs/" in self.b.current_url else None, "the job page")

    def submit(self, sample, budget):
        self.b.get(self.base + "#/")
        until(lambda: self.el("#f-sample").is_displayed(), "the form")
        Select(self.el("#f-sample")).select_by_visible_text(sample)
        b = self.el("#f-budget")
        b.clear()
        b.send_keys(str(budget))
        self.el("#f-go").click()
        return self.job_id()

    def test_page(self):
        self.b.get(self.base)
        self.assertIn("lcnd", self.b.title)
        # no token yet: the list says so
        until(lambda: "401" in self.el("#l-err").text, "the 401 hint")
        self.assertIn("token", self.el("#l-err").text)
        tok = self.el("#token")
        tok.send_keys(TOKEN)
        tok.send_keys(Keys.TAB)  # change event: kept in session storage
        until(lambda: self.el("#l-err").text == "", "the list with the token")

        # a sample through the form; the plot and the layout while it runs
        first = self.submit("grid-100", 6)
        until(lambda: int(self.el("#plot").get_attribute("data-points")) >= 2, "plot points")
        until(lambda: int(self.el("#layout").get_attribute("data-drawn")) >= 1, "a layout drawn")
        st = self.d.get("/jobs/" + first).json()
        self.assertIn(st["state"], ("running", "succeeded"))
        seen_running = st["state"] == "running"
        n0 = int(self.el("#plot").get_attribute("data-points"))
        st = self.d.wait(first)
        self.assertEqual(st["state"], "succeeded")
        # the final layout is drawn; its K, counted in the page, is the job's
        until(lambda: "succeeded" in self.el("#j-info").text, "the final state on the page")
        until(lambda: self.el("#layout").get_attribute("data-k") == str(st["best"]["K"]),
              "the final layout's K")
        self.assertGreaterEqual(int(self.el("#plot").get_attribute("data-points")), n0)
        self.assertTrue(seen_running or n0 >= 2)
        until(lambda: "final layout" in self.el("#layout-legend").text, "the final layout drawn")
        # the plot's lines are drawn (a path with a point per event)
        d = self.el("#plot path:last-of-type").get_attribute("d")
        self.assertTrue(d.startswith("M") and d.count("V") >= 1, d)
        self.shot("job.png")

        # a second job, cancelled from its page
        second = self.submit("planted-60", 60)
        until(lambda: self.d.get("/jobs/" + second).json()["state"] == "running", "running")
        until(lambda: self.el("#j-cancel").is_enabled(), "the cancel button")
        self.el("#j-cancel").click()
        st = self.d.wait(second)
        self.assertEqual(st["state"], "cancelled")
        until(lambda: "cancelled" in self.el("#j-info").text, "cancelled on the page")

        # the list shows both; a finished job reads back with its plot
        self.b.get(self.base + "#/")
        until(lambda: len(self.b.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")) >= 2, "the rows")
        rows = {r.get_attribute("data-id"): r.text
                for r in self.b.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")}
        self.assertIn("succeeded", rows[first])
        self.assertIn("cancelled", rows[second])
        self.shot("list.png")
        self.b.get(self.base + "#/jobs/" + first)
        until(lambda: int(self.el("#plot").get_attribute("data-points")) >= 1, "a finished job's plot")
        until(lambda: int(self.el("#layout").get_attribute("data-drawn")) >= 1, "its layout")
        self.assertIn("succeeded", self.el("#j-info").text)


if __name__ == "__main__":
    # a skip (no browser) is reported to CTest as skipped (77), not passed
    result = unittest.main(verbosity=2, exit=False).result
    if result.skipped and not result.testsRun:
        raise SystemExit(77)
    raise SystemExit(0 if result.wasSuccessful() else 1)
