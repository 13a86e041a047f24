"""The user's own path (issue 15): ``make run`` in a fresh copy of the tree, exactly as the README
says, then the console in a real browser, the plain ``openstack`` CLI, a soak of concurrent
clients, and the conductor killed with SIGKILL in the middle of that traffic.

``CLOUDCORE_SOAK_SECONDS`` sets the soak's length (300 s by default, what ``make test`` runs).
"""
from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import shot

from .madecloud import ADMIN_PASSWORD, DEMO_PASSWORD, MadeCloud, copy_tree
from .test_cli_security_groups import wait_active
from .traffic import connect, run_traffic, wait_no_leaks

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

SOAK_SECONDS = float(os.environ.get("CLOUDCORE_SOAK_SECONDS", "300"))
CLOUD_PROCESSES = {"redis", "web", "conductor", "beat", "volume", "compute1", "compute2", "compute3", "compute4",
                   "novncproxy", "serialproxy"}


@pytest.fixture(scope="module")
def made_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MadeCloud]:
    root = copy_tree(Path(tmp_path_factory.mktemp("made-cloud")) / "cloudcore")
    cloud = MadeCloud.in_copy(root)
    try:
        cloud.start()
        _wait_computes_up(cloud)
        cloud.first_pids = {name: p["pid"] for name, p in cloud.processes().items()}  # type: ignore[attr-defined]
        yield cloud
    finally:
        cloud.stop()
    # Ctrl-C stops every child: the supervisor's last word is "stopped" for each
    assert {p["state"] for p in cloud.processes().values()} == {"stopped"}, cloud.tail(40)


def _wait_computes_up(cloud: MadeCloud, timeout: float = 120.0) -> None:
    admin = connect(cloud, "cloudcore-admin")
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len([s for s in admin.compute.services() if s.binary == "nova-compute" and s.state == "up"]) == 4:
                return
            time.sleep(1)
        raise AssertionError(f"the four compute services are not up:\n{cloud.tail(40)}")
    finally:
        admin.close()


def _console_page(browser: Any, cloud: MadeCloud, path: str) -> Any:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(20000)
    page.goto(f"{cloud.url}/login/?next={path}")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", ADMIN_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
    return page


def test_the_cloud_runs_redis_as_its_broker_under_var(made_cloud: MadeCloud) -> None:
    # given the cloud make run started
    procs = made_cloud.processes()
    # then every process runs, Redis among them, listening on the socket under var/
    assert set(procs) == CLOUD_PROCESSES and {p["state"] for p in procs.values()} == {"running"}
    assert made_cloud.redis().ping()
    assert (made_cloud.var_dir / "redis.sock").is_socket()
    assert "redis+socket://" in made_cloud.log_path.read_text()
    assert not (made_cloud.var_dir / "broker").exists()  # no filesystem transport


def test_console_is_served_styled_and_live(made_cloud: MadeCloud, browser: Any) -> None:
    # given an admin logged in to the console of the cloud make run started (gunicorn, not a test server)
    page = _console_page(browser, made_cloud, "/")
    # then both stylesheets applied (a colour only console.css sets, a variable only Bootstrap
    # defines) and htmx and the console's script ran
    header_bg = page.evaluate("getComputedStyle(document.querySelector('header.top')).backgroundColor")
    assert header_bg == "rgb(24, 33, 58)", header_bg
    assert page.evaluate("getComputedStyle(document.body).getPropertyValue('--bs-primary').trim()") == "#0d6efd"
    assert page.evaluate("document.documentElement.getAttribute('data-console-js')") == "live"
    for path in ("console/console.css", "vendor/bootstrap-5.3.9/bootstrap.min.css"):
        css = page.request.get(f"{made_cloud.url}/static/{path}")
        assert css.status == 200 and css.headers["content-type"].startswith("text/css"), path
    shot(page, "make-run-overview")
    page.context.close()


def test_console_opens_a_guests_serial_and_vnc_consoles(made_cloud: MadeCloud, browser: Any) -> None:
    # given a server booted with the CLI on the cloud make run started (its test-driver guest's
    # serial line and VNC server are compute/virt/testconsoles.py, served by its compute worker)
    cloud = made_cloud
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net", "tty-vm")
    sid = wait_active(cloud, "tty-vm")["id"]
    try:
        for width in (1280, 390):
            page = _console_page(browser, cloud, f"/servers/{sid}/")
            page.set_viewport_size({"width": width, "height": 900})
            # when the serial console is opened from the server page
            page.click("[data-console-open=serial]")
            # then xterm.js is connected through make run's serial proxy (websockify, port 6083 here
            # as the API's SERIALPROXY_BASE_URL says) and shows the guest's boot up to its prompt
            page.wait_for_selector("#console-status[data-state=connected]")
            assert page.locator("#remote-console").get_attribute("data-websocket-url").startswith(
                f"ws://127.0.0.1:{cloud.env.get('CLOUDCORE_SERIALPROXY_PORT', '6083')}/?token=")
            page.locator("#console-terminal .xterm-rows").filter(has_text="tty-vm login:").wait_for()
            shot(page, f"make-run-serial-console-{width}")
            # and the VNC console connects through the VNC proxy and draws the guest's screen
            page.go_back()
            page.click("[data-console-open=vnc]")
            page.wait_for_selector("#console-status[data-state=connected]")
            page.wait_for_function("() => { const c = document.querySelector('#console-vnc canvas');"
                                   " return c && c.width > 0 && c.getContext('2d')"
                                   ".getImageData(c.width / 2, c.height / 2, 1, 1).data[3] === 255; }")
            shot(page, f"make-run-vnc-console-{width}")
            page.context.close()
    finally:
        cloud.openstack("server", "delete", "--wait", "tty-vm")


def _member_page(browser: Any, cloud: MadeCloud, width: int = 1280) -> Any:
    """The demo project's member logged in to the console, as the README's user would."""
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    page.set_default_timeout(20000)
    page.goto(f"{cloud.url}/login/")
    page.fill("input[name=username]", "demo")
    page.fill("input[name=password]", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{cloud.url}/")
    return page


def _cells_vcpu_used(page: Any) -> int:
    return int(page.evaluate("[...document.querySelectorAll('#capacity-cells .cap[data-resource=VCPU]')]"
                             ".reduce((n, c) => n + Number(c.dataset.used), 0)"))


#: records, in the page itself, each status the server page's live region shows (a reload would
#: start the record again, and clear the marker the test sets)
STATUS_RECORDER = """
new MutationObserver(() => {
  const live = document.querySelector('#server-live');
  if (!live) return;
  window.__seen = window.__seen || [];
  const status = live.dataset.status;
  if (window.__seen[window.__seen.length - 1] !== status) window.__seen.push(status);
}).observe(document, {childList: true, subtree: true, attributes: true});
"""


def test_member_launches_watches_opens_the_serial_console_and_deletes_in_the_console(
        made_cloud: MadeCloud, browser: Any) -> None:
    # given a server of another project (admin's) and the admin's overview open on the capacity bars
    cloud = made_cloud
    hidden = cloud.openstack_json("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--nic", "none",
                                  "--os-compute-api-version", "2.37", "--wait", "admins-secret",
                                  cloud="cloudcore-admin")
    overview = _console_page(browser, cloud, "/")
    overview.evaluate("window.__same_page = true")
    used_before = _cells_vcpu_used(overview)
    try:
        # when the demo project's member logs in and launches from the servers page's form
        page = _member_page(browser, cloud)
        page.context.add_init_script(STATUS_RECORDER)
        page.goto(f"{cloud.url}/servers/")
        assert "admins-secret" not in page.locator("#server-table").inner_text()
        form = page.locator("form[action='/servers/new/']")
        form.locator("input[name=name]").fill("watched")
        form.locator("select[name=flavor]").select_option(label="m1.tiny")
        form.locator("select[name=image]").select_option(label="tiny")
        form.locator("select[name=network]").select_option(label="demo-net")
        form.locator("button").click()
        # then the server page follows the build live, BUILD then ACTIVE, without a reload
        page.wait_for_url("**/servers/*/")
        page.evaluate("window.__same_page = true")
        page.wait_for_function("document.querySelector('#server-live').dataset.status === 'ACTIVE'", timeout=45000)
        seen = page.evaluate("window.__seen")
        assert page.evaluate("window.__same_page") is True
        assert seen[0] == "BUILD" and seen[-1] == "ACTIVE" and "ERROR" not in seen, seen
        # and its timeline shows the create action done, with the build event on a compute host
        create = page.locator("#server-timeline .timeline > li[data-action=create]")
        create.filter(has_text="compute_build_and_run_instance").wait_for()
        page.wait_for_function("document.querySelector('#server-timeline li[data-action=create]')"
                               ".classList.contains('t-done')")
        shot(page, "make-run-member-server-active")
        server_id = page.url.rstrip("/").rsplit("/", 1)[1]
        # and the admin's capacity bars grew by its vCPU, by the overview's own polling
        overview.wait_for_function(
            "[...document.querySelectorAll('#capacity-cells .cap[data-resource=VCPU]')]"
            f".reduce((n, c) => n + Number(c.dataset.used), 0) === {used_before + 1}", timeout=30000)
        assert overview.evaluate("window.__same_page") is True
        shot(overview, "make-run-overview-after-boot")
        # when the member opens the serial console (its button appeared with ACTIVE, live)
        page.click("[data-console-open=serial]")
        # then xterm.js shows the guest's output up to its login prompt
        page.wait_for_selector("#console-status[data-state=connected]")
        page.locator("#console-terminal .xterm-rows").filter(has_text="watched login:").wait_for()
        shot(page, "make-run-member-serial-console")
        # and another project's server is neither listed nor shown to the member
        page.goto(f"{cloud.url}/servers/")
        table = page.locator("#server-table").inner_text()
        assert "watched" in table and "admins-secret" not in table
        response = page.goto(f"{cloud.url}/servers/{hidden['id']}/")
        assert response.status == 404 and "admins-secret" not in page.content()
        # when the member deletes the server from its page
        page.goto(f"{cloud.url}/servers/{server_id}/")
        page.on("dialog", lambda dialog: dialog.accept())
        page.locator("#server-actions button[value=delete]").click()
        # then the servers list says so, and the server leaves it by the list's own polling
        page.wait_for_url(f"{cloud.url}/servers/")
        assert "The server is being deleted." in page.locator(".messages").inner_text()
        page.evaluate("window.__same_page = true")
        page.wait_for_function("!document.querySelector('#server-table').innerText.includes('watched')",
                               timeout=30000)
        assert page.evaluate("window.__same_page") is True
        assert "watched" not in [s["Name"] for s in cloud.openstack_json("server", "list")]
        shot(page, "make-run-member-deleted")
        page.context.close()
        overview.context.close()
    finally:
        cloud.openstack("server", "delete", "--wait", hidden["id"], cloud="cloudcore-admin")
        left = [s["ID"] for s in cloud.openstack_json("server", "list") if s["Name"] == "watched"]
        for sid in left:
            cloud.openstack("server", "delete", "--wait", sid)


def test_cli_volume_lifecycle_with_the_clis_defaults(made_cloud: MadeCloud) -> None:
    # given a server
    cloud = made_cloud
    server = cloud.openstack_json("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network",
                                  "demo-net", "--wait", "vol-host")
    # when a volume is created with the plain CLI (it sends null metadata, description and type)
    created = cloud.openstack_json("volume", "create", "--size", "1", "vol1")
    assert created["status"] in ("creating", "available")
    _wait_volume(cloud, "vol1", "available")
    assert "vol1" in [v["Name"] for v in cloud.openstack_json("volume", "list")]
    # then it attaches, shows in-use, detaches and deletes
    cloud.openstack("server", "add", "volume", server["id"], "vol1")
    attached = _wait_volume(cloud, "vol1", "in-use")
    assert attached["attachments"][0]["server_id"] == server["id"]
    cloud.openstack("server", "remove", "volume", server["id"], "vol1")
    _wait_volume(cloud, "vol1", "available")
    cloud.openstack("volume", "delete", "vol1")
    cloud.volume_status("volume", "vol1", None)
    assert "vol1" not in [v["Name"] for v in cloud.openstack_json("volume", "list")]
    cloud.openstack("server", "delete", "--wait", server["id"])


def _wait_volume(cloud: MadeCloud, name: str, status: str, timeout: float = 60.0) -> dict[str, Any]:
    """``volume show`` of ``name`` once it is ``status`` (waited for with openstacksdk: the wait is
    not what the test checks, and a CLI poll pays the CLI's start-up each time)."""
    cloud.volume_status("volume", name, status, timeout=timeout)
    shown: dict[str, Any] = cloud.openstack_json("volume", "show", name)
    assert shown["status"] == status, shown
    return shown


def test_hypervisor_statistics_and_uptime_with_the_cli(made_cloud: MadeCloud) -> None:
    cloud = made_cloud
    stats = cloud.openstack_json("hypervisor", "stats", "show", "--os-compute-api-version", "2.87",
                                 cloud="cloudcore-admin")
    assert stats["count"] == 4 and stats["vcpus"] == 8 + 16 + 8 + 16  # compute.demo.HOSTS
    hypervisor = cloud.openstack_json("hypervisor", "list", cloud="cloudcore-admin")[0]
    uptime = cloud.admin_compute_get(f"/os-hypervisors/{hypervisor['ID']}/uptime", "2.87")
    assert " up " in uptime["hypervisor"]["uptime"]


def test_soak_concurrent_clients_leave_the_cloud_whole(made_cloud: MadeCloud) -> None:
    # given the cloud up, with no server
    cloud = made_cloud
    web_requests_before = len(cloud.web_statuses())
    # when SDK clients (two projects) and a CLI client boot, act on and delete servers for the soak's length
    report = run_traffic(cloud, SOAK_SECONDS, sdk_clients=3, cli_clients=1)
    # then they did real work, saw no error, and no server ended ERROR
    assert len(report.created) >= 8 and report.actions >= 4, report
    assert report.errors == [], report.errors[:5]
    assert report.errored == [], report.errored
    assert sorted(report.deleted) == sorted(report.created)
    # and the web answered no 5xx
    statuses = cloud.web_statuses()[web_requests_before:]
    assert statuses and not [s for s in statuses if s >= 500], [s for s in statuses if s >= 500]
    # and every cloud process is still the one that started
    procs = cloud.processes()
    assert {n: p["pid"] for n, p in procs.items()} == cloud.first_pids  # type: ignore[attr-defined]
    assert all(p["restarts"] == 0 and p["state"] == "running" for p in procs.values()), procs
    # and nothing leaked: allocations, ports, attachments, BuildRequests; the broker's queues drained
    assert wait_no_leaks(cloud) == {"servers": [], "allocations": {}, "ports": [], "attachments": [],
                                    "build_requests": [], "queued": {}, "unacked": 0}


def test_conductor_killed_mid_traffic_is_restarted_and_nothing_sticks(made_cloud: MadeCloud) -> None:
    # given traffic of several clients
    cloud = made_cloud
    old_pid = cloud.processes()["conductor"]["pid"]

    caught: list[bool] = []

    def kill_conductor() -> None:
        # SIGKILL while the conductor holds a task it took and has not finished (its message is in
        # the broker's unacked hash), so that the kill interrupts an operation; at most 30 s of looking.
        # A conductor task takes a few milliseconds: seen held, the conductor is stopped (SIGSTOP) and
        # looked at again, so that it cannot finish and acknowledge the task between the look and the kill
        client = cloud.redis()

        def holds_a_task() -> bool:
            return any(b'"conductor"]' in raw for raw in client.hvals("unacked"))

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not caught:
            if holds_a_task():
                os.kill(old_pid, signal.SIGSTOP)
                if holds_a_task():
                    caught.append(True)
                    break
                os.kill(old_pid, signal.SIGCONT)
            time.sleep(0.002)
        os.kill(old_pid, signal.SIGKILL)

    # when the conductor is killed with SIGKILL in the middle of it
    report = run_traffic(cloud, 60, sdk_clients=3, cli_clients=0, during=kill_conductor, during_after=15)
    # then the supervisor restarted it, logged why, and shows it
    conductor = cloud.processes()["conductor"]
    assert conductor["state"] == "running" and conductor["restarts"] == 1 and conductor["pid"] != old_pid
    assert conductor["events"][-1]["reason"].startswith("killed by SIGKILL"), conductor["events"]
    # and the task it held went back on its queue for the restarted conductor
    assert caught, "the conductor was never seen holding a task in 30 s of traffic"
    # (the one it was caught holding, and any other its threads held then: the periodic beat's, say)
    requeued = re.search(r"requeued (\d+) unacknowledged task\(s\) \[(.*)\]", conductor["events"][-1]["reason"])
    assert requeued and int(requeued.group(1)) >= 1, conductor["events"]
    assert int(requeued.group(1)) == len(requeued.group(2).split(", ")), conductor["events"]
    assert "process conductor killed by SIGKILL" in cloud.log_path.read_text()
    # and every operation in flight finished, or ended ERROR with a fault: none stuck, all deleted
    assert report.errors == [], report.errors[:5]
    assert all(fault for _id, fault in report.errored), report.errored
    assert sorted(report.deleted) == sorted(report.created) and len(report.created) >= 3
    # and the cloud is whole again
    assert wait_no_leaks(cloud) == {"servers": [], "allocations": {}, "ports": [], "attachments": [],
                                    "build_requests": [], "queued": {}, "unacked": 0}
    # and it still serves a new server
    server = cloud.openstack_json("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network",
                                  "demo-net", "--wait", "after-kill")
    assert server["status"] == "ACTIVE"
    cloud.openstack("server", "delete", "--wait", server["id"])


def test_console_shows_the_supervised_restart(made_cloud: MadeCloud, browser: Any) -> None:
    # given the conductor restarted by the supervisor (the test above)
    assert made_cloud.processes()["conductor"]["restarts"] >= 1
    # when an admin opens the hosts page
    page = _console_page(browser, made_cloud, "/hosts/")
    # then the restart is listed with its reason
    card = page.locator("#supervised-processes")
    assert card.is_visible()
    text = card.inner_text()
    assert "conductor" in text and "killed by SIGKILL" in text, text
    shot(page, "make-run-hosts-restart")
    page.context.close()
