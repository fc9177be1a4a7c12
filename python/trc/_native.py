"""The compiled half of the package, trc._trc (python/src/TrcModule.cpp),
loaded on first use. It is loaded with RTLD_GLOBAL: the training steps it
compiles and loads call the runtime's trc_rt_* functions, which the
extension provides (as trc-run's executable does)."""
import os
import sys

_module = None


def native():
    """The extension module; ImportError says how to build it."""
    global _module
    if _module is None:
        flags = sys.getdlopenflags()
        sys.setdlopenflags(flags | os.RTLD_GLOBAL)
        try:
            from . import _trc
        except ImportError as e:
            raise ImportError(
                "trc's compiled extension (trc._trc) is not built or not on the path: run "
                "scripts/build.sh, which builds it into build/python/trc and puts it on the "
                f"project's .venv ({e})") from e
        finally:
            sys.setdlopenflags(flags)
        _module = _trc
    return _module
