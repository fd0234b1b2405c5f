"""Every failure of a call is a CairnError: a server that is slow, breaks
the connection, answers something that is not JSON, or is draining (503,
Retry-After), which the opt-in retries send again."""

from __future__ import annotations

import http.server
import socket
import threading
import time
import unittest

from cairn_client import CairnError, Client


class _Handler(http.server.BaseHTTPRequestHandler):
    busy_left = 0  # 503s still to answer on /busy

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/v1/agents":  # slow: past the client's timeout
            time.sleep(1.0)
            self._send(200, b'{"agents":[]}')
        elif self.path == "/v1/me":  # not JSON
            self._send(200, b"<html>a proxy's login page</html>", "text/html")
        elif self.path == "/healthz":  # the connection breaks mid-answer
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b'{"status":')
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        elif self.path.startswith("/v1/sessions/busy"):
            if _Handler.busy_left > 0:
                _Handler.busy_left -= 1
                self._send(503, b'{"error":{"code":"stopping","message":"this server is draining"}}', retry_after="1")
            else:
                self._send(200, b'{"id":"busy","status":"paused","seq":3}')
        else:
            self._send(404, b'{"error":{"code":"not_found","message":"no such session"}}')

    def _send(self, status: int, body: bytes, ctype: str = "application/json", retry_after: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if retry_after:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(body)


class Failures(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        cls.url = f"http://127.0.0.1:{cls.httpd.server_address[1]}"

    @classmethod
    def tearDownClass(cls) -> None:
        cls.httpd.shutdown()
        cls.httpd.server_close()

    def refused(self, call) -> CairnError:
        with self.assertRaises(CairnError) as caught:
            call()
        return caught.exception

    def test_timeout(self) -> None:
        err = self.refused(lambda: Client(self.url, timeout=0.2).agents())
        self.assertEqual((err.status, err.code), (0, "timeout"), err)

    def test_not_json(self) -> None:
        err = self.refused(lambda: Client(self.url).me())
        self.assertEqual((err.status, err.code), (200, "invalid_response"), err)
        self.assertIn("a proxy's login page", err.message)

    def test_broken_connection(self) -> None:
        err = self.refused(lambda: Client(self.url).health())
        self.assertEqual((err.status, err.code), (0, "connection"), err)

    def test_unreachable(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # nobody listens once it closes
        err = self.refused(lambda: Client(f"http://127.0.0.1:{port}").health())
        self.assertEqual((err.status, err.code), (0, "unreachable"), err)

    def test_503_retry_after(self) -> None:
        _Handler.busy_left = 1
        err = self.refused(lambda: Client(self.url).get_session("busy"))
        self.assertEqual((err.status, err.code, err.retry_after), (503, "stopping", 1.0), err)

        _Handler.busy_left = 2
        began = time.monotonic()
        s = Client(self.url, retries=2).get_session("busy")
        self.assertEqual((s.id, s.status), ("busy", "paused"))
        self.assertGreaterEqual(time.monotonic() - began, 2.0, "it waited Retry-After before each retry")

        _Handler.busy_left = 3
        err = self.refused(lambda: Client(self.url, retries=1).get_session("busy"))
        self.assertEqual(err.status, 503, "retries spent: the last 503 is raised")

    def test_other_errors_are_not_retried(self) -> None:
        err = self.refused(lambda: Client(self.url, retries=5).get_session("nope"))
        self.assertEqual((err.status, err.code, err.retry_after), (404, "not_found", None))


if __name__ == "__main__":
    unittest.main()
