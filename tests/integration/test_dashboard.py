"""The dashboard in a real browser (Debian's chromium and chromedriver, driven by selenium,
headless): the local event builder of examples/local.yaml, one `daqflow exec` per context over
TCP, is opened at the EVM's control port; the test sees every application and its state, drives
the cluster with the page's buttons, sees the event-rate plot move, changes a parameter while
Ready and is refused one while Enabled with the reason shown, reads the logs and the history,
and saves a screenshot of every view (build/test-output/dashboard/). It also measures how long a
change of a counter takes to show in the page.

Runs under /usr/bin/python3 (tests/CMakeLists.txt), whose selenium is Debian's python3-selenium."""

import os
import re
import shutil
import statistics
import tempfile
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from daqflow_testlib import (DaqflowTestCase, control_ports, http, read_example, rewrite_ports,
                             wait_until)

APPS = ["evm0", "ru1", "ru2", "ru3", "bu1", "bu2"]
# A busy machine: every wait is for something the page must do, with room to spare.
WAIT_S = 60


def output_dir():
    """build/test-output/dashboard, beside the binary under test."""
    binary = os.environ.get("DAQFLOW", "")
    build = os.path.dirname(os.path.dirname(os.path.abspath(binary))) if binary else "."
    path = os.path.join(build, "test-output", "dashboard")
    os.makedirs(path, exist_ok=True)
    return path


class Dashboard(DaqflowTestCase):
    def start_cluster(self, output="{kind: discard}"):
        """examples/local.yaml with the BUs' output replaced, one `daqflow exec` per context, and
        a headless browser."""
        text = rewrite_ports(read_example("local.yaml"))
        text = re.sub(r"output: \{kind: file[^}]*\}", f"output: {output}", text)
        self.config = self.write_config("local.yaml", text)
        names = re.findall(r"^\s*-\s*name\s*:\s*([\w.-]+)", text, re.M)
        ports = control_ports(text)
        self.ports = dict(zip(names, ports))
        for name in names:
            proc = self.start(["exec", self.config, "--context", name], f"{name}.log")
            self.wait_http(self.ports[name], proc)
        self.open_browser()

    def open_browser(self):
        """A headless browser, quit at the end of the test."""
        self.out = output_dir()
        # The browser's profile and its temporary files (its singleton socket's folder) in a
        # folder of the test's own, removed once the browser has quit.
        browser_tmp = tempfile.mkdtemp(prefix="daqflow-chromium-")
        self.addCleanup(shutil.rmtree, browser_tmp, True)
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                    "--window-size=1500,1100", "--disable-gpu",
                    f"--user-data-dir={os.path.join(browser_tmp, 'profile')}"):
            options.add_argument(arg)
        service = Service("/usr/bin/chromedriver", env={**os.environ, "TMPDIR": browser_tmp})
        self.browser = webdriver.Chrome(service=service, options=options)
        self.addCleanup(self.browser.quit)

    # --- what the page shows -------------------------------------------------------------------

    def wait(self, condition, what):
        try:
            return WebDriverWait(self.browser, WAIT_S, poll_frequency=0.1).until(
                lambda _: condition())
        except Exception as e:
            self.browser.save_screenshot(os.path.join(self.out, "failed.png"))
            raise AssertionError(f"the dashboard did not show {what} within {WAIT_S} s: {e!r}; "
                                 f"page text:\n{self.browser.find_element(By.TAG_NAME, 'body').text}")

    def text(self, css):
        found = self.browser.find_elements(By.CSS_SELECTOR, css)
        return found[0].text if found else None

    def app_states(self):
        return {app: self.text(f'tr[data-app="{app}"] .state') for app in APPS}

    def wait_states(self, state):
        self.wait(lambda: all(s == state for s in self.app_states().values()),
                  f"every application {state}")

    def click(self, css):
        self.browser.find_element(By.CSS_SELECTOR, css).click()

    def click_and_confirm(self, css, accept=True):
        """A button that asks first (Halt, Reset): the page's confirmation, accepted or not."""
        self.click(css)
        alert = WebDriverWait(self.browser, WAIT_S).until(lambda b: b.switch_to.alert)
        self.assertIn("?", alert.text)
        if accept:
            alert.accept()
        else:
            alert.dismiss()

    def go(self, view):
        self.browser.get(f"http://127.0.0.1:{self.ports['evm']}/#/{view}")
        self.wait(lambda: self.browser.execute_script(
            "return window.daqflow && window.daqflow.view && window.daqflow.view.name") ==
            view.split("/")[0], f"the {view} view")

    def screenshot(self, name):
        self.browser.save_screenshot(os.path.join(self.out, f"{name}.png"))

    def plot_data(self, plot_id):
        return self.browser.execute_script(
            f"const u = window.daqflow.plots.get('{plot_id}'); return u ? u.data : null;")

    def set_param(self, name, value):
        field = self.browser.find_element(By.CSS_SELECTOR, f'input[data-param="{name}"]')
        field.clear()
        field.send_keys(str(value))
        self.click("#params-apply")

    # --- the test -------------------------------------------------------------------------------

    def test_the_dashboard_shows_and_drives_a_running_event_builder(self):
        self.start_cluster()
        self.go("cluster")
        self.wait_states("Halted")
        for ctx in self.ports:
            self.wait(lambda: "answered" in (self.text(f'h2[data-context="{ctx}"] .heartbeat') or ""),
                      f"the heartbeat of context {ctx}")
        self.screenshot("cluster-halted")

        self.click('#cluster-buttons button[data-cmd="Configure"]')
        self.wait_states("Ready")

        # A parameter changed while Ready is taken, through the EVM's executive to bu1's.
        self.go("app/bu1")
        self.wait(lambda: self.text("#app-state") == "Ready", "bu1 Ready")
        self.set_param("blocks_in_flight", 3)
        self.wait(lambda: "changed: blocks_in_flight" in (self.text("#params-message") or ""),
                  "the parameter change accepted")
        status, bu1 = http(self.ports["bu1"], "GET", "/api/v1/apps/bu1")
        self.assertEqual(bu1["params"]["blocks_in_flight"], 3)

        self.go("cluster")
        self.click('#cluster-buttons button[data-cmd="Enable"]')
        self.wait_states("Enabled")
        self.screenshot("cluster-enabled")

        # The event-rate plot moves: more points, and events being built.
        self.go("evb")
        self.wait(lambda: float(self.text("#evb-rate").split()[0].replace("–", "0") or 0) > 0,
                  "a positive event rate")
        first = self.plot_data("evb-rate-plot")
        self.wait(lambda: len(self.plot_data("evb-rate-plot")[0]) > len(first[0]) + 2,
                  "the event-rate plot to gain points")
        rates = [r for r in self.plot_data("evb-rate-plot")[1] if r is not None]
        self.assertTrue(rates and max(rates) > 0, rates)
        self.wait(lambda: self.text('#evb-bus tr[data-app="bu2"] td:nth-child(5)') not in
                  (None, "", "–"), "the share of bu2")
        self.screenshot("event-builder")

        # A parameter change while Enabled is refused, and the page says why.
        self.go("app/bu1")
        self.wait(lambda: self.text("#app-state") == "Enabled", "bu1 Enabled")
        self.wait(lambda: self.text('tr[data-metric="events_built"]') is not None,
                  "bu1's metrics")
        self.set_param("blocks_in_flight", 2)
        self.wait(lambda: "refused (409)" in (self.text("#params-message") or ""),
                  "the refusal of a change while Enabled")
        self.assertIn("Enabled", self.text("#params-message"))
        self.screenshot("application")

        # From a change of a counter to the page showing it: evm0's events_built as the API
        # gives it, then as the application view shows it (its exact value is the cell's title).
        self.go("app/evm0")
        self.wait(lambda: self.text('tr[data-metric="events_built"]') is not None,
                  "evm0's metrics")
        latencies = []
        for _ in range(5):
            _, evm = http(self.ports["evm"], "GET", "/api/v1/apps/evm0")
            asked = time.monotonic()
            value = evm["metrics"]["events_built"]

            def shown():
                cell = self.browser.find_elements(
                    By.CSS_SELECTOR, 'tr[data-metric="events_built"] td:nth-child(3)')
                title = cell[0].get_attribute("title") if cell else None
                return title is not None and float(title) >= value
            self.wait(shown, f"events_built >= {value}")
            latencies.append(time.monotonic() - asked)
            time.sleep(0.3)
        with open(os.path.join(self.out, "latency.txt"), "w") as f:
            f.write(" ".join(f"{x:.3f}" for x in latencies) + "\n")
        print(f"\ncounter to page: median {statistics.median(latencies):.2f} s, "
              f"max {max(latencies):.2f} s over {len(latencies)} samples", flush=True)

        self.go("transports")
        self.wait(lambda: self.text('#transports tr[data-app="ru1"] td:nth-child(3)') == "tcp",
                  "ru1's tcp endpoint")
        # Per peer: each RU sends its blocks to both BUs.
        for bu in ("bu1", "bu2"):
            self.wait(lambda: self.text(f'#transport-peers tr[data-app="ru1"][data-peer="{bu}"] '
                                        'td:nth-child(9)') not in (None, "", "0", "–"),
                      f"ru1's messages to {bu}")
        self.screenshot("transports")

        # The audit of the commands sent through this executive, through the logs view.
        self.go("logs")
        self.wait(lambda: "audit: PUT /api/v1/contexts/bu1/apps/bu1/params" in
                  (self.text("#log-lines") or ""), "the audit line of the parameter change")
        # A few more updates later, each line is still there once: the change and the refusal.
        time.sleep(2.5)
        self.assertEqual(self.text("#log-lines").count("/api/v1/contexts/bu1/apps/bu1/params"), 2,
                         self.text("#log-lines"))
        self.screenshot("logs")

        self.go("history")
        select = self.browser.find_element(By.ID, "history-series")
        self.wait(lambda: len(select.find_elements(By.TAG_NAME, "option")) > 0, "the series")
        self.browser.execute_script(
            "const s = document.getElementById('history-series'); s.value = 'evm0/events_built';"
            "s.dispatchEvent(new Event('change'));")
        self.wait(lambda: (lambda d: d is not None and len(d[0]) > 3)(
            self.plot_data("history-plot")), "the history of evm0's events_built")
        self.screenshot("history")

        self.go("cluster")
        self.click_and_confirm('#cluster-buttons button[data-cmd="Halt"]')
        self.wait_states("Halted")
        for ctx, port in self.ports.items():
            status, _ = http(port, "POST", "/api/v1/shutdown")
            self.assertEqual(status, 202)
        for proc, log in self.procs:
            self.assertEqual(proc.wait(30), 0, log)

    def test_events_a_disk_cap_kept_out_are_flagged_in_the_builder_view(self):
        """BUs writing files with a 1 MiB cap: past it, the events they build are counted as
        not written, and the builder view flags the count."""
        self.start_cluster("{kind: file, max_total_mb: 1}")
        self.go("cluster")
        self.wait_states("Halted")
        self.click('#cluster-buttons button[data-cmd="Configure"]')
        self.wait_states("Ready")
        self.click('#cluster-buttons button[data-cmd="Enable"]')
        self.wait_states("Enabled")
        self.go("evb")
        column = 8  # 'not written'
        for bu in ("bu1", "bu2"):
            cell = f'#evb-bus tr[data-app="{bu}"] td:nth-child({column})'
            self.wait(lambda: (self.text(cell) or "–") not in ("–", "0"),
                      f"{bu}'s events not written")
            self.wait(lambda: "alarm" in self.browser.find_element(
                By.CSS_SELECTOR, cell).get_attribute("class"), f"{bu}'s count flagged")
            _, body = http(self.ports[bu], "GET", "/api/v1/apps/" + bu)
            self.assertGreater(body["metrics"]["events_not_written"], 0, body["metrics"])
        self.screenshot("event-builder-not-written")
        self.go("cluster")
        self.click_and_confirm('#cluster-buttons button[data-cmd="Halt"]')
        self.wait_states("Halted")

    def test_a_run_of_daqflow_run_has_its_number_dead_time_alarms_and_record_on_the_page(self):
        """A run started by daqflow run, its number from the run registry (the registry's second:
        a short run came first), BUs writing files under a 1 MiB cap: the strip on every view
        shows the number, the state and the totals; the builder view the EVM's own readout in
        the dead time; the alarm strip the outputs held at their cap; the buttons only what the
        state allows, Halt only once confirmed; the runs page both runs, from the registry."""
        first = self.write_config("first.yaml", rewrite_ports(read_example("local-inproc.yaml")))
        code, out, summary = self.run_config(first, "--duration", "0.5", logs="logs-first")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["run_number"], 1)

        text = rewrite_ports(read_example("local.yaml"))
        text = re.sub(r"output: \{kind: file[^}]*\}", "output: {kind: file, max_total_mb: 1}", text)
        config = self.write_config("local.yaml", text)
        names = re.findall(r"^\s*-\s*name\s*:\s*([\w.-]+)", text, re.M)
        self.ports = dict(zip(names, control_ports(text)))
        run = self.start(["run", config, "--duration", "0", "--log-dir", self.path("logs")],
                         "run.log")
        wait_until(lambda: "running until" in self.output_of("run.log") or run.poll() is not None,
                   120, "the run to be enabled")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.open_browser()

        self.go("cluster")
        self.wait(lambda: self.text("#run-number") == "run 2", "the run's number from the registry")
        self.wait(lambda: self.text("#run-state") == "Enabled", "the run Enabled")
        self.wait(lambda: "enabled for" in (self.text("#run-enabled") or ""), "the time since Enable")
        self.wait(lambda: (self.text("#run-built") or "–") not in ("–", "0"), "events built")
        _, evm = http(self.ports["evm"], "GET", "/api/v1/apps/evm0")
        self.assertGreater(evm["metrics"]["events_built"], 0)
        # Only what Enabled allows; Halt asks first, and nothing happens when the answer is no.
        for cmd, allowed in (("Configure", False), ("Enable", False), ("Suspend", True),
                             ("Halt", True), ("Reset", False)):
            button = self.browser.find_element(
                By.CSS_SELECTOR, f'#cluster-buttons button[data-cmd="{cmd}"]')
            self.wait(lambda: button.is_enabled() == allowed,
                      f"{cmd} {'allowed' if allowed else 'greyed'} while Enabled")
        self.click_and_confirm('#cluster-buttons button[data-cmd="Halt"]', accept=False)
        time.sleep(1.5)
        self.assertEqual(set(self.app_states().values()), {"Enabled"})

        # The outputs held at their cap raise an alarm, on every view.
        self.go("evb")
        for bu in ("bu1", "bu2"):
            self.wait(lambda: f"{bu}: output held at its cap" in (self.text("#alarms") or ""),
                      f"the alarm of {bu}'s output at its cap")
        # The dead time: the EVM's own readout with the RUs, its throttled share shown.
        cell = '#evb-rus tr[data-app="evm0"] td:nth-child(7)'
        self.wait(lambda: (self.text(cell) or "").endswith(" %"), "the EVM's throttled share")
        for ru in ("ru1", "ru2", "ru3"):
            self.assertIsNotNone(self.text(f'#evb-rus tr[data-app="{ru}"]'))
        self.screenshot("run-strip-and-alarms")

        self.go("runs")
        self.wait(lambda: self.text('#runs tr[data-run="2"]') is not None and
                  self.text('#runs tr[data-run="1"]') is not None, "both runs of the registry")
        self.assertIn("running", self.text('#runs tr[data-run="2"]'))
        self.assertIn("ended", self.text('#runs tr[data-run="1"]'))
        self.click('#runs tr[data-run="1"] a')
        self.wait(lambda: "run 1" in (self.text("#run-detail-title") or ""), "run 1 in whole")
        transitions = self.text("#run-transitions") or ""
        for app in APPS:
            self.assertIn(app, transitions)
        self.screenshot("runs")

        code, out = self.daqflow(["stop", config], timeout=180)
        self.assertEqual(code, 0, out)
        self.assertEqual(run.wait(120), 0, self.output_of("run.log"))


if __name__ == "__main__":
    unittest.main()
