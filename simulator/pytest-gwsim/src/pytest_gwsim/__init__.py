"""pytest-gwsim: gwsim, the Gateway Device Management Interface simulator,
started for a pytest session and stopped on any exit."""

from .gwsim import Gwsim, GwsimError, start

__all__ = ["Gwsim", "GwsimError", "start"]
