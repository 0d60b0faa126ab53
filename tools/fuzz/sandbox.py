"""Run one tool invocation in a forked child with a memory limit and a timeout, and classify what it did.

The campaign process imports atc_py and runner once; each case forks, so a case costs a fork (~5 ms), not a
Python start (~0.5 s). The parent must hold no threads when it forks (a forked thread pool is dead in the
child): everything that may start threads (compiling seeds included) runs in children.
"""
from __future__ import annotations

import os
import re
import resource
import select
import signal
import sys
import time
import traceback
from dataclasses import dataclass

CODE = re.compile(r"\b(E\d{5})\b")
# a Python exception om-run passed on inside a coded line: a kernel that failed on a file the validator let through
# (E30004 "the kernel failed: ValueError: ..."), or a program the simulator could not build (E30001 "...: OpError:")
LEAK = re.compile(r"E3000[14]: .*(the kernel failed: |Failed to load model [^:\n]*: )[A-Z]\w*(Error|Exception):")
KINDS = ("ok", "error", "internal", "uncoded", "traceback", "hang", "blowup", "crash", "leak")
BAD = ("internal", "uncoded", "traceback", "hang", "blowup", "crash", "leak")


@dataclass
class Outcome:
    kind: str            # one of KINDS
    exit: int | None     # exit status, None if killed by a signal / timeout
    code: str = ""       # the first E-code printed on a failure
    output: str = ""     # stdout + stderr (truncated)
    seconds: float = 0.0


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(fn, args: list[str], cwd: str, out_fd: int, mem_budget: int) -> None:
    """In the forked child: limits, redirected output, the tool, then _exit (never returns)."""
    code = 70
    try:
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.setsid()
        os.chdir(cwd)
        limit = _vm_bytes() + mem_budget
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        sys.stdout = os.fdopen(1, "w", buffering=1)
        sys.stderr = os.fdopen(2, "w", buffering=1)
        try:
            code = fn(args)
            code = 0 if code is None else int(code)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:   # noqa: BLE001 -- what the tool let escape: exactly what the campaign counts
            traceback.print_exc()
            code = 70
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


def classify(exit_status: int | None, output: str, timed_out: bool) -> tuple[str, str]:
    codes = CODE.findall(output)
    code = codes[0] if codes else ""
    if timed_out:
        return "hang", code
    if "Traceback (most recent call last)" in output:
        return ("blowup" if "MemoryError" in output else "traceback"), code
    if exit_status is None:
        return "crash", code
    if "MemoryError" in output:
        return "blowup", code
    if exit_status == 0:
        return "ok", code
    if "E19999" in codes:
        return "internal", "E19999"
    if LEAK.search(output):
        return "leak", code
    return ("error" if code else "uncoded"), code


def run(fn, args: list[str], cwd: str, timeout: float = 30.0, mem_budget: int = 3 << 30,
        keep_output: int = 4000) -> Outcome:
    """fn(args) -> exit code, run in a child in `cwd` with `mem_budget` bytes of address space beyond the
    parent's and `timeout` seconds of wall time."""
    out_path = os.path.join(cwd, ".fuzz_output")
    out_fd = os.open(out_path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(fn, args, cwd, out_fd, mem_budget)
    os.close(out_fd)
    timed_out, status = False, None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    deadline = t0 + timeout
    while True:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            break
        if pidfd is not None:
            select.select([pidfd], [], [], min(left, 1.0))
        else:
            time.sleep(0.005)
    if pidfd is not None:
        os.close(pidfd)
    elapsed = time.monotonic() - t0
    with open(out_path, "rb") as f:
        output = f.read().decode("utf-8", "replace")
    os.unlink(out_path)
    exit_status = os.WEXITSTATUS(status) if (status is not None and os.WIFEXITED(status) and not timed_out) else None
    kind, code = classify(exit_status, output, timed_out)
    if len(output) > keep_output:
        output = output[:keep_output // 2] + "\n...\n" + output[-keep_output // 2:]
    return Outcome(kind, exit_status, code, output, elapsed)
