#!/usr/bin/env python3
"""tport chat driven as a person uses it: through a pseudo-terminal.

Usage: test_chat_pty.py TPORT_CLI   (TPORT_SHARED_DIR names ../shared)

The model is synthesized (tport synth) with the vocabulary of
../shared/models/llama-2-tiny-random.gguf, so text goes in and out, and no
chat template, so ChatML is used.  Checked:
- --help exits 0 and lists the commands; a pipe gets one plain reply line
  per message line;
- typing a message at the prompt gives a reply and a new prompt; line
  editing (cursor left, insert) and history (up arrow) act on what is sent
  (seen in the conversation /save writes); a line ending in a backslash
  continues on the next;
- an unbounded reply (-n -1) streams (text arrives while the reply is not
  finished), fills the context of 64 tokens several times over (context
  shifts, /stats), and Ctrl-C stops it without ending the program;
- /save, a further message, then in a new process /load and the same
  message: the same reply (greedy);
- a conversation of many turns in a small context (turns dropped, the
  cache shifted) keeps answering;
- --session carries a conversation to the next process, for the same
  model only;
- Ctrl-C at the prompt drops the line being typed; Ctrl-D ends the
  program with status 0.
"""
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FAILS = 0


def check(name, ok, detail=""):
    global FAILS
    if ok:
        print("ok   " + name)
    else:
        FAILS += 1
        print("FAIL " + name + (": " + detail if detail else ""))


class Chat:
    """tport chat on a pseudo-terminal; reads everything it writes."""

    def __init__(self, cli, args, cwd):
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(cwd)
            os.environ["TERM"] = "xterm"
            os.execv(cli, [cli, "chat"] + args)
        self.pid, self.fd, self.out = pid, fd, b""
        self.status = None

    def read_for(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            r, _, _ = select.select([self.fd], [], [], max(0.0, end - time.time()))
            if not r:
                break
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                break
            if not data:
                break
            self.out += data

    def expect(self, pattern, timeout=20.0, start=0):
        """Waits until pattern (bytes regex) appears after offset start;
        returns the match or None."""
        end = time.time() + timeout
        rx = re.compile(pattern, re.S)
        while True:
            m = rx.search(self.out, start)
            if m:
                return m
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                return None
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return None
            if not data:
                return rx.search(self.out, start)
            self.out += data

    def send(self, data):
        os.write(self.fd, data)

    def prompt_after(self, start, timeout=30.0):
        """Offset just past the next prompt ("> " at the start of a line)."""
        m = self.expect(rb"(^|\n)> ", timeout, start)
        return m.end() if m else None

    def exited_within(self, timeout):
        """Whether the program ends within timeout (its status kept), without
        killing it."""
        end = time.time() + timeout
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                return True
            self.read_for(0.05)
        return False

    def wait(self, timeout=10.0):
        if self.status is not None:
            return self.status
        end = time.time() + timeout
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                return self.status
            self.read_for(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None

    def alive(self):
        pid, st = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.status = os.waitstatus_to_exitcode(st)
            return False
        return True


def strip_ansi(b):
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]|\r|\x07", b"", b)


def reply_between(chat, start, end, typed):
    """The reply text the terminal shows between the echo of the typed
    line and the next prompt."""
    text = strip_ansi(chat.out[start:end]).decode("utf-8", "replace")
    at = text.rfind(typed)
    if at >= 0:
        text = text[at + len(typed):]
    return text.strip()


def read_conv(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    msgs = []
    for l in lines[1:]:
        if "\t" in l:
            role, content = l.split("\t", 1)
            msgs.append((role, content.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")))
    return msgs


def main():
    if len(sys.argv) != 2:
        print("usage: test_chat_pty.py TPORT_CLI")
        return 2
    cli = os.path.abspath(sys.argv[1])
    shared = os.environ.get("TPORT_SHARED_DIR", "../shared")
    vocab = os.path.join(shared, "models", "llama-2-tiny-random.gguf")
    if not os.path.exists(vocab):
        print("skipped: %s absent" % vocab)
        return 77
    work = tempfile.mkdtemp(prefix="tport-chat-test.")
    try:
        return run(cli, vocab, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(cli, vocab, work):
    model = os.path.join(work, "m.gguf")
    subprocess.run([cli, "synth", "--arch", "llama", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--layers",
                    "2", "--ctx", "512", "--out-gain", "4", "--vocab-from", vocab, "-o", model],
                   check=True, capture_output=True)

    # --help, and a pipe
    h = subprocess.run([cli, "chat", "--help"], capture_output=True, text=True)
    check("--help exits 0 and lists the commands", h.returncode == 0 and all(
        c in h.stdout for c in ("/reset", "/system", "/save", "/load", "/stats", "/help", "/quit", "Ctrl-C")))
    p = subprocess.run([cli, "chat", "-m", model, "--temp", "0", "-n", "8"], input="Hello\nHow are you?\n/quit\n",
                       capture_output=True, text=True, timeout=120)
    lines = p.stdout.split("\n")
    check("pipe: one plain reply line per message", p.returncode == 0 and len(lines) == 3 and lines[2] == ""
          and all(lines[:2]) and "\x1b" not in p.stdout, repr(p.stdout) + p.stderr)

    # real templates (../shared/models/templates) over several turns
    templates = os.path.join(os.path.dirname(vocab), "templates")
    for name in ("Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B"):
        path = os.path.join(templates, name + ".jinja")
        if not os.path.exists(path):
            print("skipped: %s absent" % path)
            continue
        p = subprocess.run([cli, "chat", "-m", model, "--temp", "0", "-n", "6", "--system", "Be brief.",
                            "--chat-template-file", path], input="Hello\nAnd then?\nBye\n",
                           capture_output=True, text=True, timeout=120)
        lines = p.stdout.split("\n")
        check("pipe with the %s template: three replies" % name, p.returncode == 0 and len(lines) == 4
              and all(lines[:3]) and not p.stderr, repr(p.stdout) + p.stderr)

    # --session: the conversation continues in the next process; another
    # model's session is refused
    sess = os.path.join(work, "s.tps")
    args = [cli, "chat", "-m", model, "--temp", "0", "-n", "6", "--session", sess]
    p1 = subprocess.run(args, input="Hello\n", capture_output=True, text=True, timeout=120)
    p2 = subprocess.run(args, input="/stats\n", capture_output=True, text=True, timeout=120)
    m = re.search(r"context: (\d+) of \d+ tokens; messages: (\d+)", p2.stdout)
    check("--session: the next process holds the conversation", p1.returncode == 0 and p2.returncode == 0 and m
          and int(m.group(1)) > 0 and int(m.group(2)) == 2, p1.stderr + p2.stdout + p2.stderr)
    other = os.path.join(work, "other.gguf")
    subprocess.run([cli, "synth", "--arch", "llama", "--dim", "64", "--heads", "4", "--layers", "1", "--vocab-from",
                    vocab, "-o", other], check=True, capture_output=True)
    p3 = subprocess.run([cli, "chat", "-m", other, "--session", sess], input="Hi\n", capture_output=True,
                        text=True, timeout=120)
    check("--session: another model's file is refused", p3.returncode == 2 and "another model" in p3.stderr,
          p3.stderr)

    base = ["-m", model, "--temp", "0", "--ctx", "64", "--system", "Be brief."]
    c = Chat(cli, base + ["-n", "-1"], work)
    pos = c.prompt_after(0)
    check("a prompt on the terminal", pos is not None, strip_ansi(c.out).decode(errors="replace"))
    if pos is None:
        return 1

    # an unbounded reply: it streams, shifts the context, and Ctrl-C stops it
    c.send(b"Tell me everything\r")
    c.read_for(1.0)
    first = len(c.out)
    c.read_for(1.0)
    check("the reply streams (more text arrives while it goes on)", len(c.out) > first > pos + 40,
          "%d then %d bytes" % (first - pos, len(c.out) - pos))
    c.send(b"\x03")
    m = c.expect(rb"\[stopped\]\r?\n> ", 20, pos)
    check("Ctrl-C stops the reply and gives a new prompt", m is not None and c.alive(),
          strip_ansi(c.out[-300:]).decode(errors="replace"))
    pos = m.end() if m else len(c.out)
    c.send(b"/stats\r")
    m = c.expect(rb"context shifts: (\d+)", 20, pos)
    check("an unbounded reply in a context of 64 shifted it", m is not None and int(m.group(1)) >= 2,
          m.group(0).decode() if m else strip_ansi(c.out[pos:]).decode(errors="replace"))
    pos = c.prompt_after(pos) or len(c.out)
    c.send(b"/quit\r")
    check("/quit ends with status 0", c.wait() == 0, str(c.status))

    # typing, editing, history, continuation lines, /save
    roomy = ["-m", model, "--temp", "0", "--ctx", "512", "--system", "Be brief."]
    c = Chat(cli, roomy + ["-n", "12"], work)
    pos = c.prompt_after(0)
    c.send(b"never sent")  # Ctrl-C at the prompt drops the line
    c.read_for(0.3)
    c.send(b"\x03")
    pos = c.prompt_after(pos) or len(c.out)
    c.send(b"Helo wrld\r")  # sent as typed
    pos2 = c.prompt_after(pos)
    check("a typed message gets a reply and a new prompt", pos2 is not None and
          len(reply_between(c, pos, pos2 - 2, "Helo wrld")) > 0, strip_ansi(c.out[pos:]).decode(errors="replace"))
    pos = pos2 or len(c.out)
    # cursor left twice, insert "o": "Hi there yu" -> "Hi there you"
    c.send(b"Hi there yu\x1b[D")
    c.send(b"o\r")
    pos = c.prompt_after(pos) or len(c.out)
    c.send(b"\x1b[A\r")  # up arrow: the last message again
    pos = c.prompt_after(pos) or len(c.out)
    c.send(b"first line\\\r")
    c.send(b"second line\r")
    pos = c.prompt_after(pos) or len(c.out)
    save = os.path.join(work, "talk.tps")
    c.send(("/save %s\r" % save).encode())
    m = c.expect(rb"saved \d+ messages", 20, pos)
    check("/save", m is not None, strip_ansi(c.out[pos:]).decode(errors="replace"))
    pos = c.prompt_after(pos) or len(c.out)
    users = [t for r, t in read_conv(save + ".chat") if r == "user"] if os.path.exists(save + ".chat") else []
    check("the conversation holds what was typed and edited",
          users == ["Helo wrld", "Hi there you", "Hi there you", "first line\nsecond line"], repr(users))
    c.send(b"What comes next?\r")
    pos2 = c.prompt_after(pos)
    want = reply_between(c, pos, pos2 - 2, "What comes next?") if pos2 else None
    # Ctrl-D.  One typed in the instant the line editor switches the
    # terminal out of canonical mode can be lost (the end-of-file of an
    # empty canonical line carries no byte to keep); the program then
    # waits, as it would for a person, who presses it again.
    c.read_for(0.3)
    c.send(b"\x04")
    if not c.exited_within(5.0):
        c.send(b"\x04")
    check("Ctrl-D ends with status 0", c.wait() == 0,
          "%s: %r" % (c.status, strip_ansi(c.out[-300:]).decode(errors="replace")))

    # a new process continues the saved conversation the same way
    c = Chat(cli, roomy + ["-n", "12"], work)
    pos = c.prompt_after(0)
    c.send(("/load %s\r" % save).encode())
    m = c.expect(rb"loaded \d+ messages", 20, pos)
    check("/load in a new process", m is not None, strip_ansi(c.out[pos:]).decode(errors="replace"))
    pos = c.prompt_after(pos) or len(c.out)
    c.send(b"What comes next?\r")
    pos2 = c.prompt_after(pos)
    got = reply_between(c, pos, pos2 - 2, "What comes next?") if pos2 else None
    check("after /load the same message gets the same reply", want and got == want, "%r vs %r" % (got, want))
    c.send(b"/quit\r")
    c.wait()

    # many turns in a small context (128: room for a turn or two): turns
    # dropped, the cache shifted over them
    small = ["-m", model, "--temp", "0", "--ctx", "128", "--system", "Be brief."]
    c = Chat(cli, small + ["-n", "6"], work)
    pos = c.prompt_after(0)
    answered = 0
    for i in range(14):
        c.send(("Question number %d about things\r" % i).encode())
        p2 = c.prompt_after(pos)
        if p2 and reply_between(c, pos, p2 - 2, "about things"):
            answered += 1
        pos = p2 or len(c.out)
    c.send(b"/stats\r")
    m = c.expect(rb"turns dropped: (\d+); context shifts: (\d+)", 20, pos)
    check("14 turns in a context of 128 all answered", answered == 14, "%d answered" % answered)
    check("turns were dropped and the cache shifted over them", m is not None and int(m.group(1)) > 0
          and int(m.group(2)) > 0, m.group(0).decode() if m else "")
    c.send(b"/quit\r")
    c.wait()

    print("%d check(s) failed" % FAILS if FAILS else "all checks passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
