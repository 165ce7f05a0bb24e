"""`claudeloop dashboard`'s mistakes: one line and exit 2, never a traceback."""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from claudeloop.cli.dashboard import exposure
from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]


def test_a_port_in_use_is_one_line(claudeloop: Invoke) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = claudeloop("dashboard", "--port", port)
    assert_one_line_error(result, f"--port {port}", "cannot listen")


def test_an_address_not_of_this_machine_is_one_line(claudeloop: Invoke) -> None:
    assert_one_line_error(
        claudeloop("dashboard", "--host", "no.such.host.invalid"), "--host", "cannot listen"
    )


def test_a_port_out_of_range_is_refused(claudeloop: Invoke) -> None:
    result = claudeloop("dashboard", "--port", "70000")
    assert result.exit_code == 2
    assert "70000" in result.err


def test_a_certificate_without_its_key_is_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    certificate = tmp_path / "box.crt"
    certificate.write_text("not a certificate\n")
    assert_one_line_error(
        claudeloop("dashboard", "--certfile", certificate), "--certfile and --keyfile", "both"
    )


def test_a_certificate_that_is_no_pem_is_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    certificate = tmp_path / "box.crt"
    certificate.write_text("not a certificate\n")
    result = claudeloop("dashboard", "--certfile", certificate, "--keyfile", certificate)
    assert_one_line_error(result, "--certfile", "not a PEM certificate")


def test_beyond_this_machine_plain_http_is_warned_and_https_says_the_token_is_safe() -> None:
    plain = exposure("0.0.0.0", 8420)
    assert plain is not None
    assert "plain http" in plain
    assert "--certfile" in plain
    over_tls = exposure("0.0.0.0", 8420, tls=True)
    assert over_tls is not None
    assert "https" in over_tls
    assert "plain http" not in over_tls


class Started:
    """`claudeloop dashboard` in a process of its own, and what it printed before
    serving."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "claudeloop", "dashboard", "--port", "0", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.lines: list[str] = []
        while not self.lines or not self.lines[-1].startswith("(Ctrl-C"):
            line = self.process.stdout.readline()
            assert line, self.process.stderr.read() if self.process.stderr else ""
            self.lines.append(line.rstrip("\n"))
        self.url = self.lines[0].split(": ", 1)[1]

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDELOOP_")}
    env.update({"CLAUDELOOP_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}, **more)
    return env


# segno's compact drawing: a character is two rows of modules, a light module drawn.
_HALVES = {" ": (True, True), "█": (False, False), "▀": (False, True), "▄": (True, False)}


def _drawn_matrix(lines: list[str]) -> list[list[bool]]:
    """The modules a QR code drawn in characters holds: True where dark."""
    matrix: list[list[bool]] = []
    for line in lines:
        top, bottom = [_HALVES[c][0] for c in line], [_HALVES[c][1] for c in line]
        matrix += [top, bottom]
    return matrix


def test_qr_draws_the_sign_in_url_at_the_address_the_phone_reaches(tmp_path: Path) -> None:
    import segno

    started = Started(
        "--qr", env=_env(tmp_path, CLAUDELOOP_DASHBOARD_URL="https://box.ts.net:8420")
    )
    try:
        token = started.url.split("?token=", 1)[1]
        phone = f"https://box.ts.net:8420/?token={token}"
        assert started.lines[1] == f"from your phone (dashboard_url): {phone}"
        drawing = [line for line in started.lines[2:-1] if line]
        expected = segno.make(phone, error="m").matrix
        border = 4
        drawn = _drawn_matrix(drawing)
        inner = [row[border:-border] for row in drawn[border : border + len(expected)]]
        assert inner == [[bool(module) for module in row] for row in expected]
    finally:
        started.close()


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = tmp_path / "box.crt", tmp_path / "box.key"
    certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certfile, keyfile


def test_with_a_certificate_it_serves_https_and_its_cookie_is_secure_for_a_week(
    tmp_path: Path,
) -> None:
    certfile, keyfile = _certificate(tmp_path)
    started = Started("--certfile", str(certfile), "--keyfile", str(keyfile), env=_env(tmp_path))
    try:
        assert started.url.startswith("https://127.0.0.1:")
        base = started.url.split("/?", 1)[0]
        trusted = ssl.create_default_context(cafile=str(certfile))
        connection = http.client.HTTPSConnection(
            base.removeprefix("https://"), context=trusted, timeout=30
        )
        connection.request("GET", started.url.removeprefix(base))
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 303
        cookie = answer.getheader("set-cookie") or ""
        assert "Max-Age=604800" in cookie
        assert "Secure" in cookie
        assert "samesite=strict" in cookie.lower()
        session = cookie.split(";", 1)[0]
        # The cookie signs in; a change from another origin is still refused.
        connection.request("GET", "/", headers={"Cookie": session})
        page = connection.getresponse()
        assert page.status == 200, page.read()
        page.read()
        connection.request(
            "POST",
            "/run/nosuch/do/stop",
            headers={"Cookie": session, "Origin": "https://evil.example"},
        )
        refused = connection.getresponse()
        assert refused.status == 403
        assert b"own page" in refused.read()
        # From its own https origin, the same request passes the guard (no such run).
        connection.request(
            "POST", "/run/nosuch/do/stop", headers={"Cookie": session, "Origin": base}
        )
        passed = connection.getresponse()
        assert passed.status != 403, passed.read()
        passed.read()
    finally:
        started.close()
