"""A real browser for the HTML report's tests: Debian's chromium, headless."""
import os
import signal
import subprocess


def browser_dom(path: str, width: int = 1400) -> str:
    """The page's DOM after load, as Debian's chromium renders it headless in a window
    width pixels wide."""
    argv = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--window-size={width},1000", "--virtual-time-budget=5000",
            f"--user-data-dir={os.path.dirname(path)}/chromium",
            "--dump-dom", f"file://{path}"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=240)     # chromium starts slowly on a loaded machine
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)   # the browser and its helper processes
            p.wait(10)
    assert p.returncode == 0, f"chromium exited {p.returncode}"
    return out
