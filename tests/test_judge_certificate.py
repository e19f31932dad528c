"""An https judge whose certificate this machine does not trust: the run says so, names the
certificate's problem and SSL_CERT_FILE (which both the SDK and the direct path read), and with
SSL_CERT_FILE set to the certificate the same run judges. A real TLS server on loopback with a
certificate made by openssl for the test."""

from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest
from conftest import run_qareport
from openai_stub import serve_stub

from qareport.exit_status import JUDGE_FAILED, REPORT_WRITTEN

QA = """\
- template_id: t1
  questions:
    - id: q1
      question_text: How many?
      reference_answer: three; four
"""
RESPONSE = '[{"question_id": "q1", "actual_answer": "three; five", "actual_steps": []}]'


@pytest.fixture
def self_signed(tmp_path):
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return cert, context


def test_an_untrusted_judge_certificate_is_named_with_ssl_cert_file(tmp_path, self_signed):
    cert, context = self_signed
    (tmp_path / "qa.yaml").write_text(QA)
    (tmp_path / "r.json").write_text(RESPONSE)
    with serve_stub(tls=context) as server:
        args = ("run", tmp_path / "qa.yaml", "--responses", tmp_path / "r.json", "--output", tmp_path / "week.xlsx",
                "-q", "--judge-base-url", server.url, "--judge-retries", "0", "--cache-path",
                tmp_path / "judge.sqlite3")
        env = {"OPENAI_API_KEY": "sk-test", "HOME": str(tmp_path)}
        refused = run_qareport(*args, env=env)
        assert refused.returncode == JUDGE_FAILED, refused.stderr
        assert (f"cannot reach the judge at {server.url}: its TLS certificate is not trusted (self-signed "
                "certificate)") in refused.stderr
        assert "set SSL_CERT_FILE to that authority's certificate file" in refused.stderr
        trusted = run_qareport(*args, env={**env, "SSL_CERT_FILE": str(cert)})
        assert trusted.returncode == REPORT_WRITTEN, trusted.stderr
        assert server.calls >= 1
