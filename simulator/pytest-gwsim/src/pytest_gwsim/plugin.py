"""The pytest plugin: a gwsim fixture for each session.

    def test_dims_the_light(gwsim):
        ...  # gwsim.url, gwsim.api_key, gwsim.secret, gwsim.sign(ts), ...

Options: --gwsim-bin PATH (default $GWSIM_BIN, else gwsim on PATH),
--gwsim-fleet FILE, --gwsim-arg ARG (repeatable: --gwsim-arg=--rate-limit=4),
--gwsim-port N (default: a free one), --gwsim-check-report (the session
fails when an app broke a rule of the interface, as gwsim clients --fail).
"""

import pytest

from .gwsim import GwsimError, _stop_all, start


def pytest_addoption(parser):
    group = parser.getgroup("gwsim", "gwsim, the Gateway Device Management Interface simulator")
    group.addoption("--gwsim-bin", default=None, help="the gwsim program (default: $GWSIM_BIN, else gwsim on PATH)")
    group.addoption("--gwsim-fleet", default=None, help="a fleet file for gwsim serve (default: the demo fleet)")
    group.addoption("--gwsim-arg", action="append", default=[], help="one more argument of gwsim serve (repeatable)")
    group.addoption("--gwsim-port", type=int, default=0, help="the port (default: a free one)")
    group.addoption("--gwsim-check-report", action="store_true",
                    help="fail the session when an app broke a rule of the interface (the client report)")


@pytest.fixture(scope="session")
def gwsim_session(request):
    """The session's gwsim, started once, stopped at the end of the session
    (and on any exit)."""
    opt = request.config.getoption
    g = start(binary=opt("--gwsim-bin"), fleet=opt("--gwsim-fleet"), args=opt("--gwsim-arg"), port=opt("--gwsim-port"))
    try:
        yield g
        if opt("--gwsim-check-report"):
            broken = g.broken()
            if broken:
                pytest.fail("the app broke rules of the interface (gwsim's client report):\n  " + "\n  ".join(broken),
                            pytrace=False)
    finally:
        g.stop()


@pytest.fixture
def gwsim(gwsim_session):
    """The session's gwsim, its devices as the fleet has them and no fault
    in force: url, token, api_key, secret, myservice_id, mac, devices,
    sign(timestamp), timestamp(), set_faults(...), state(mac, sn),
    report(), broken()."""
    gwsim_session.reset()
    gwsim_session.clear_faults()
    return gwsim_session


def pytest_unconfigure(config):
    _stop_all()


__all__ = ["GwsimError"]
