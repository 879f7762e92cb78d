"""The plugin's own tests, each through a real gwsim ($GWSIM_BIN).

Run from the repository with the plugin not installed:
    GWSIM_BIN=bin/gwsim PYTHONPATH=simulator/pytest-gwsim/src \
        pytest-3 -p pytest_gwsim.plugin simulator/pytest-gwsim/tests
(fixtures/pytestplugin_test.go runs them in make test). Sessions started
by these tests load the plugin the same way ($GWSIM_PLUGIN_ARGS, or
"-p pytest_gwsim.plugin"; empty when it is installed).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

PLUGIN = os.environ.get("GWSIM_PLUGIN_ARGS", "-p pytest_gwsim.plugin").split()


def post(url, path, body, xml=False):
    """One request of the app: (status, headers, body text)."""
    if xml:
        fields = "".join("<%s>%s</%s>" % (k, v, k) for k, v in body.items())
        data = ('<?xml version="1.0" encoding="UTF-8"?><xml><control>%s</control></xml>' % fields).encode()
        ct = "application/xml"
    else:
        data, ct = json.dumps({"control": body}).encode(), "application/json"
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": ct})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, res.headers, res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def command(gwsim, sn, **fields):
    ts = gwsim.timestamp()
    body = {"api_key": gwsim.api_key, "timestamp": ts, "sign": gwsim.sign(ts),
            "myservice_id": gwsim.myservice_id, "mac": gwsim.mac, "sn": sn}
    body.update(fields)
    return body


def test_fixture_gives_url_token_and_credentials(gwsim):
    assert gwsim.url.startswith("http://127.0.0.1:")
    assert len(gwsim.token) >= 32
    assert gwsim.api_key and gwsim.secret and gwsim.myservice_id and gwsim.mac
    assert any(d["type"] == "Light Dimmer" for d in gwsim.devices)
    # The token is gwsim's own, and the admin API needs it.
    req = urllib.request.Request(gwsim.url + "/_sim/faults")
    try:
        urllib.request.urlopen(req, timeout=5)
        raise AssertionError("the admin API answered without the token")
    except urllib.error.HTTPError as e:
        assert e.code == 401


def test_signed_commands_in_both_formats(gwsim):
    sn = gwsim.device("Light Dimmer")
    status, _, text = post(gwsim.url, "/v1/services/gateway/command", command(gwsim, sn, type="Light Dimmer", dimming="40"))
    assert status == 200, text
    time.sleep(1.1)  # another second: the XML request is no replay of the JSON one
    status, _, text = post(gwsim.url, "/v1/services/gateway/command", command(gwsim, sn, type="Light Dimmer", dimming="41"), xml=True)
    assert status == 200, text
    assert gwsim.state(gwsim.mac, sn)["state"]["dimming"] == 41
    assert gwsim.broken() == []


def test_faults_and_their_retry_after(gwsim):
    gwsim.set_faults({"offline_gateways": [gwsim.mac]})
    sn = gwsim.device("Light Dimmer")
    status, headers, text = post(gwsim.url, "/v1/services/gateway/command", command(gwsim, sn, type="Light Dimmer", dimming="50"))
    assert status == 504 and "gateway_offline" in text, text
    assert headers["Retry-After"] == "1"


def test_each_test_starts_without_faults(gwsim):
    sn = gwsim.device("Light Dimmer")
    status, _, text = post(gwsim.url, "/v1/services/gateway/command", command(gwsim, sn, type="Light Dimmer", dimming="51"))
    assert status == 200, text


def running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone too: it serves nothing.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid, seconds=10):
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError("gwsim (pid %d) still runs %gs after its session ended" % (pid, seconds))
        time.sleep(0.05)


def session(tmp_path, body, *args):
    """A pytest session of an app's, in a process of its own."""
    test = tmp_path / "test_app.py"
    test.write_text(textwrap.dedent(body))
    env = dict(os.environ)
    if PLUGIN:  # not installed: the package beside these tests
        src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGIN, *args, str(test)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


SLEEPER = """
    import time
    def test_long(gwsim):
        with open("gwsim.pid", "w") as f:
            f.write(str(gwsim.pid))
        time.sleep(60)
"""


def started(tmp_path, proc):
    pidfile = tmp_path / "gwsim.pid"
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the session did not start gwsim:\n" + proc.communicate()[0])
        time.sleep(0.05)
    return int(pidfile.read_text())


def test_sigterm_to_pytest_stops_gwsim(tmp_path):
    proc = session(tmp_path, SLEEPER)
    pid = started(tmp_path, proc)
    proc.send_signal(signal.SIGTERM)  # what a CI timeout sends
    proc.communicate(timeout=20)
    wait_gone(pid)


def test_sigkill_to_pytest_stops_gwsim(tmp_path):
    proc = session(tmp_path, SLEEPER)
    pid = started(tmp_path, proc)
    proc.kill()  # no handler runs: the kernel tells gwsim its parent died
    proc.communicate(timeout=20)
    wait_gone(pid)


def test_failed_test_stops_gwsim(tmp_path):
    proc = session(tmp_path, """
        def test_fails(gwsim):
            with open("gwsim.pid", "w") as f:
                f.write(str(gwsim.pid))
            assert False, "the app's test failed"
    """)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 1, out
    wait_gone(int((tmp_path / "gwsim.pid").read_text()))


def test_port_taken_fails_at_once_and_never_uses_the_orphan(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # An orphan of an earlier run, with a token of its own, holds the port.
    orphan = subprocess.Popen([os.environ["GWSIM_BIN"], "serve", "--addr", "127.0.0.1:%d" % port],
                              env=dict(os.environ, GWSIM_ADMIN_TOKEN="an-earlier-runs-token-0123456789abcdef"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/_sim/health" % port, timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline, "the orphan did not start"
                time.sleep(0.05)
        begun = time.monotonic()
        proc = session(tmp_path, """
            def test_uses_gwsim(gwsim):
                open("ran", "w").close()
        """, "--gwsim-port", str(port))
        out = proc.communicate(timeout=60)[0]
        took = time.monotonic() - begun
        assert proc.returncode != 0, out
        assert not (tmp_path / "ran").exists(), "a test ran against the orphan:\n" + out
        assert "address already in use" in out or "not the gwsim this run started" in out, out
        assert took < 8, "the session took %.1fs to fail:\n%s" % (took, out)
    finally:
        orphan.terminate()
        orphan.wait(timeout=10)


def test_check_report_fails_a_session_whose_app_broke_a_rule(tmp_path):
    app = """
        import json, urllib.request, urllib.error
        def test_bad_sign(gwsim):
            ts = gwsim.timestamp()
            body = {"control": {"api_key": gwsim.api_key, "timestamp": ts, "sign": "0" * 32,
                    "myservice_id": gwsim.myservice_id, "mac": gwsim.mac, "sn": gwsim.device("Light Dimmer"),
                    "type": "Light Dimmer", "dimming": "30"}}
            req = urllib.request.Request(gwsim.url + "/v1/services/gateway/command", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req)
            except urllib.error.HTTPError as e:
                assert e.code == 401
    """
    proc = session(tmp_path, app, "--gwsim-check-report")
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode != 0 and "signs_correctly" in out, out
    # Without the option the same session passes: the check is the option's.
    (tmp_path / "again").mkdir()
    proc = session(tmp_path / "again", app)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out


def test_a_fleet_file_of_the_app(tmp_path):
    fleet = tmp_path / "fleet.yaml"
    subprocess.run([os.environ["GWSIM_BIN"], "fleet", "--seed", "2", "--out", str(fleet)], check=True)
    proc = session(tmp_path, """
        def test_own_fleet(gwsim):
            assert gwsim.secret is None and gwsim.api_key is None  # the fleet file's: the app has them
            assert len(gwsim.mac) == 12 and len(gwsim.myservice_id) == 24
            assert len(gwsim.devices) == 6 and gwsim.devices[0]["sn"]
    """, "--gwsim-fleet", str(fleet))
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out
