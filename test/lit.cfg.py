# lit configuration of the trc test suite.
#
# Substitutions: trc-opt, trc-plan and the other tools (from the build: every
# folder of build/tools is on PATH), FileCheck and
# not (from LLVM 22), %python (the project's venv: torch, onnx), %models (the
# exported GPT-2/BERT/GPT-J-style models), %scripts and %inputs (test inputs),
# %tinyshakespeare (../shared/data's, feature "tinyshakespeare" when present).
import os

import lit.formats

config.name = "trc"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.trc_obj_root, "test")

tool_dirs = [
    os.path.join(config.trc_tools_dir, d)
    for d in sorted(os.listdir(config.trc_tools_dir))
    if os.path.isdir(os.path.join(config.trc_tools_dir, d))
]
config.environment["PATH"] = os.pathsep.join(
    tool_dirs + [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
for var in ("HOME", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%python", config.trc_python))
# Multi-process tests (OpenMPI from Debian).
import shutil as _shutil
import subprocess as _subprocess
if _shutil.which("mpirun"):
    config.available_features.add("mpirun")
# Open MPI's shared-memory segments (4 MiB a rank, and left behind by a
# killed job) go to the build tree, not /dev/shm: a container's /dev/shm can
# be 64 MiB, which the suite's concurrent jobs fill, and a full /dev/shm
# kills every libomp process at its start with SIGBUS (trc-run now refuses
# to start instead: checkOpenMpSharedMemory), failing tests at random.
_mpi_shm = os.path.join(config.test_exec_root, "mpi-shm")
os.makedirs(_mpi_shm, exist_ok=True)
config.environment["OMPI_MCA_btl_vader_backing_directory"] = _mpi_shm
config.environment["OMPI_MCA_osc_sm_backing_directory"] = _mpi_shm
# libomp registers each process as /dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>
# and leaves the file behind when the process is killed (the suite kills
# ranks on purpose). A later process given the same pid reuses the file, and
# when it is empty (its owner was killed between creating and sizing it)
# maps it and dies of SIGBUS at start: one CI run failed so. Registrations
# of processes that no longer run are removed before the suite.
def _sweep_stale_libomp_registrations(folder="/dev/shm"):
    prefix = "__KMP_REGISTERED_LIB_"
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):].split("_")[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still running (or another user's: PermissionError below)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


_sweep_stale_libomp_registrations()
# A private mount namespace may mount its own small tmpfs over /dev/shm
# (root in a container that allows it): the full-/dev/shm tests need one.
try:
    if _subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /dev/shm"],
                       capture_output=True, timeout=20).returncode == 0:
        config.available_features.add("private-tmpfs")
except (OSError, _subprocess.TimeoutExpired):
    pass
# A one-node Slurm cluster can be started (scripts/slurm_local.sh).
if _shutil.which("srun") and all(os.path.exists("/usr/sbin/" + d)
                                 for d in ("slurmctld", "slurmd", "munged")):
    config.available_features.add("slurm")
config.substitutions.append(("%models", config.trc_models_dir))
config.substitutions.append(("%scripts", os.path.join(config.trc_src_root, "scripts")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

# The shared data sets next to the repository (../shared/data), when present.
shakespeare = os.path.join(config.trc_src_root, "..", "shared", "data", "tinyshakespeare.txt")
if os.path.isfile(shakespeare):
    config.available_features.add("tinyshakespeare")
    config.substitutions.append(("%tinyshakespeare", os.path.abspath(shakespeare)))

if os.path.isdir("/usr/share/libonnx-testdata/data/node"):
    config.available_features.add("onnx-testdata")
