"""One Slurm command (scontrol, squeue, sinfo...) that misbehaves when told to: the program
behind the wrappers tests/slurm_faults.py puts first on PATH. Standard library only.

    python slurm_fault_wrapper.py FOLDER REAL_COMMAND ARGS...

FOLDER/faults.json holds the rules, in order; the first whose `command` is this command's
name and whose `args` are all among ARGS counts the call (`seen`). Once more than `skip`
calls were seen, the next `times` calls get its `mode`:
- fail: exit 1 with `message` on stderr (nothing reaches Slurm);
- garbage: exit 0 with output that is not JSON (nothing reaches Slurm);
- truncated: run the real command, print the first half of its output;
- hang: sleep `seconds` (the caller's timeout kills it), then run the real command.
Any other call runs the real command. Every call is appended to FOLDER/calls.jsonl (time,
command, args, the mode it got) under a lock, with the rules' counters.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time


def main() -> int:
    folder, real, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    name = os.path.basename(real)
    rules_file = os.path.join(folder, "faults.json")
    with open(os.path.join(folder, "lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(rules_file) as f:
            rules = json.load(f)
        rule = next(
            (r for r in rules if r["command"] == name and all(a in args for a in r["args"])),
            {},
        )
        mode = ""
        if rule:
            rule["seen"] += 1
            if rule["seen"] > rule["skip"] and rule["fired"] < rule["times"]:
                rule["fired"] += 1
                mode = rule["mode"]
        with open(rules_file + ".new", "w") as f:
            json.dump(rules, f)
        os.replace(rules_file + ".new", rules_file)
        with open(os.path.join(folder, "calls.jsonl"), "a") as f:
            call = {"t": time.time(), "command": name, "args": args, "mode": mode}
            f.write(json.dumps(call) + "\n")
    if mode == "fail":
        sys.stderr.write(rule["message"] + "\n")
        return 1
    if mode == "garbage":
        sys.stdout.write('<html><body>502 Bad Gateway</body></html>\n{"jobs": [}\n')
        return 0
    if mode == "truncated":
        done = subprocess.run([real, *args], capture_output=True, text=True, check=False)
        sys.stdout.write(done.stdout[: len(done.stdout) // 2])
        return done.returncode
    if mode == "hang":
        time.sleep(float(rule["seconds"]))
    os.execv(real, [real, *args])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
