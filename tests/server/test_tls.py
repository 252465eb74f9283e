"""TLS through OpenSSL (--tls-cert, --tls-key): HTTPS and WSS with a
self-signed certificate, the same answers as over plain TCP; a plain client
on the TLS port gets nothing and harms nothing; a certificate without its
key is refused at start in one line."""
import asyncio
import json
import os
import socket
import ssl
import subprocess

import harness as h
from harness import Server


def certificate():
    cert, key = os.path.join(h.WORK, "cert.pem"), os.path.join(h.WORK, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def test_https_and_wss():
    cert, key = certificate()
    path = h.espeak("secure words over the wire", "tls.wav")
    want_stream = h.lt_asr([path], stream=True)[path]
    want_file = h.lt_asr([path], stream=False)[path]
    context = ssl.create_default_context(cafile=cert)
    h.HTTP_CONTEXT = context
    try:
        with Server("--tls-cert", cert, "--tls-key", key) as server:
            assert server.url.startswith("https://")
            status, _, body = h.http("GET", server.url + "/health")
            assert status == 200 and json.loads(body)["status"] == "ok"
            with open(path, "rb") as f:
                status, _, body = h.post_form(server.url + "/v1/audio/transcriptions",
                                              {"file": ("tls.wav", f.read(), "audio/wav")})
            assert status == 200 and h.words_of(json.loads(body)["words"]) == h.words_of(want_file["words"])
            replies = asyncio.run(h.vosk_transcribe(server.ws_url, path, ssl=context))
            words, phones = h.stream_outcome(replies)
            assert words == h.words_of(want_stream["words"]) and phones == h.phones_of(want_stream["phones"])
            # Plain HTTP on the TLS port: no answer, and the server goes on.
            with socket.create_connection((server.host, server.port), timeout=10) as s:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                try:
                    assert b"200 OK" not in s.recv(4096)
                except (ConnectionResetError, socket.timeout):
                    pass
            assert h.http("GET", server.url + "/health")[0] == 200
            assert server.stop() == 0
    finally:
        h.HTTP_CONTEXT = None


def test_certificate_without_key_refused():
    cert, _ = certificate()
    r = subprocess.run([h.bin_path("lt-server"), "--port", "0", "--tls-cert", cert], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == "lt-server: --tls-cert and --tls-key go together", r.stderr
    r = subprocess.run([h.bin_path("lt-server"), "--port", "0", "--tls-cert", cert, "--tls-key", cert],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "private key" in r.stderr.strip().splitlines()[-1], r.stderr


if __name__ == "__main__":
    h.main(globals())
