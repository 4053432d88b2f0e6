"""A local stand-in of Cirro for the tests and the JupyterLab flows: HTTPS endpoints and a moto S3.

An HTTPS server (a throwaway certificate the client trusts through ``REQUESTS_CA_BUNDLE`` /
``SSL_CERT_FILE``) answers the few endpoints the ``cirro`` SDK calls (read from its source:
``/api/info/system``, ``/api/projects``, ``/projects/{p}/datasets/upload``,
``/projects/{p}/datasets/{d}``, ``/projects/{p}/datasets/{d}/files``, ``/projects/{p}/s3-token``),
and a moto S3 server the SDK's boto3 reaches through ``AWS_ENDPOINT_URL_S3``. The SDK itself is
never mocked: it runs against these.

``python tests/kit/cirro_standin.py FOLDER`` runs it for a JupyterLab flow: it prints one JSON line
(the only line starting with ``{``), the environment a server needs to reach it, then reads JSON commands from stdin, one a line
(``{"download": <dataset id>, "to": <folder>}``: the dataset's files as a colleague's download
lays them out; it answers ``ok``), and stops when stdin closes.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
import ssl
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PROJECT = "proj-1"
BUCKET = "cirro-project-data"


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1, and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class StandIn:
    """What the stand-in Cirro knows: the datasets created, and extra files a listing may claim."""

    def __init__(self, s3: Any) -> None:
        self.s3 = s3
        self.datasets: dict[str, dict[str, Any]] = {}
        self.listed_extra: list[dict[str, Any]] = []
        #: The bucket new datasets' files go to (one that does not exist makes every upload fail).
        self.bucket = BUCKET
        self.deleted: list[str] = []
        #: The projects the signed-in user can use: ID -> name.
        self.projects = {PROJECT: "Breast atlas", "proj-0": "A pilot"}

    @staticmethod
    def project(project_id: str, name: str) -> dict[str, Any]:
        return {
            "id": project_id,
            "name": name,
            "description": "",
            "status": "COMPLETED",
            "tags": [],
            "organization": "lab",
            "classificationIds": [],
            "billingAccountId": "b-1",
        }

    def detail(self, dataset_id: str) -> dict[str, Any]:
        record = self.datasets[dataset_id]
        when = "2026-01-01T00:00:00+00:00"
        return {
            "id": dataset_id,
            "name": record["name"],
            "description": record.get("description", ""),
            "s3": f"s3://{record.get('bucket', BUCKET)}/datasets/{dataset_id}",
            "processId": record["processId"],
            "projectId": PROJECT,
            "sourceDatasetIds": [],
            "sourceDatasets": [],
            "sourceSampleIds": [],
            "sourceSampleFilesMap": {},
            "status": "COMPLETED",
            "statusMessage": "",
            "tags": [],
            "params": {},
            "info": {},
            "isViewRestricted": False,
            "createdBy": "tester",
            "createdAt": when,
            "updatedAt": when,
        }

    def listing(self, dataset_id: str) -> dict[str, Any]:
        prefix = f"datasets/{dataset_id}/"
        objects = self.s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
        files = [{"path": o["Key"][len(prefix) :], "size": o["Size"]} for o in objects] + self.listed_extra
        domain = f"s3://{BUCKET}/datasets/{dataset_id}"
        return {"domain": domain, "files": files, "totalFiles": len(files), "artifacts": []}

    def uploaded(self, dataset_id: str, name: str) -> bytes:
        return bytes(self.s3.get_object(Bucket=BUCKET, Key=f"datasets/{dataset_id}/data/{name}")["Body"].read())


def _not_found(path: str) -> dict[str, Any]:
    """Cirro's error body (a PortalErrorResponse, as the SDK parses it) for a path it does not know."""
    detail = f"{path.split('?')[0]} not found"
    return {"statusCode": 404, "errorCode": "NOT_FOUND", "errorDetail": detail, "errors": [{"message": detail}]}


def _handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: Any) -> None:
            raw = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _body(self) -> Any:
            return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            if path == "/api/projects":
                return self._send(200, [state.project(pid, name) for pid, name in state.projects.items()])
            if path == "/api/info/system":
                auth = {"sdkAppId": "app", "userPoolId": "pool", "endpoint": ""}
                info = {"referencesBucket": "refs", "resourcesBucket": "res", "region": "us-east-1"}
                return self._send(200, {"auth": auth, **info})
            match = re.fullmatch(rf"/api/projects/{PROJECT}/datasets/([\w-]+)(/files)?", path)
            if match and match[1] in state.datasets:
                return self._send(200, state.listing(match[1]) if match[2] else state.detail(match[1]))
            return self._send(404, _not_found(self.path))

        def do_POST(self) -> None:  # noqa: N802
            path, body = self.path.split("?")[0], self._body()
            if path == f"/api/projects/{PROJECT}/datasets/upload":
                dataset_id = str(uuid.uuid4())
                state.datasets[dataset_id] = {**body, "bucket": state.bucket}
                upload = f"s3://{BUCKET}/datasets/{dataset_id}/data"
                return self._send(201, {"id": dataset_id, "message": "", "uploadPath": upload, "bucket": BUCKET})
            if path == f"/api/projects/{PROJECT}/s3-token":
                expires = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).isoformat()
                creds = {"accessKeyId": "testing", "secretAccessKey": "testing", "sessionToken": "testing"}
                return self._send(200, {**creds, "expiration": expires, "region": "us-east-1"})
            return self._send(404, _not_found(self.path))

        def do_DELETE(self) -> None:  # noqa: N802
            match = re.fullmatch(rf"/api/projects/{PROJECT}/datasets/([\w-]+)", self.path.split("?")[0])
            if match and state.datasets.pop(match[1], None) is not None:
                state.deleted.append(match[1])
                self.send_response(202)
                self.send_header("Content-Length", "0")
                return self.end_headers()
            return self._send(404, _not_found(self.path))

    return Handler


@contextmanager
def running(folder: Path) -> Iterator[tuple[StandIn, dict[str, str]]]:
    """The stand-in Cirro and S3, up while the block runs; the environment the SDK needs to reach them."""
    import boto3  # type: ignore[import-untyped]
    import jwt
    from moto.server import ThreadedMotoServer

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    moto.start()
    s3_url = f"http://127.0.0.1:{moto.get_host_and_port()[1]}"
    s3 = boto3.client(
        "s3",
        endpoint_url=s3_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    s3.create_bucket(Bucket=BUCKET)
    state = StandIn(s3)
    cert, key = _certificate(folder)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token = jwt.encode(
        {"exp": 4102444800, "username": "tester"}, "the stand-in never checks this signature", algorithm="HS256"
    )
    # the SDK's own configuration, not the machine user's: no saved login, one attempt per file
    home = folder / "cirro-home"
    home.mkdir(exist_ok=True)
    (home / "config.ini").write_text("[General]\nauth_method =\ntransfer_max_retries = 1\n")
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": s3_url,
        "CIRRO_BASE_URL": f"localhost:{server.server_address[1]}",
        "CIRRO_HOME": str(home),
        "CIRRO_ACCESS_TOKEN": token,
        "CIRRO_PROJECT_ID": PROJECT,
        "REQUESTS_CA_BUNDLE": str(cert),
        "SSL_CERT_FILE": str(cert),
    }
    try:
        yield state, env
    finally:
        server.shutdown()
        server.server_close()
        moto.stop()


def download_as_a_colleague(cirro: StandIn, dataset_id: str, folder: Path) -> None:
    """The dataset's files as a download lays them out (``data/...``), read straight from S3."""
    for item in cirro.listing(dataset_id)["files"]:
        target = folder / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        key = f"datasets/{dataset_id}/{item['path']}"
        target.write_bytes(cirro.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


def main(folder: str) -> None:
    """Serve until stdin closes, answering ``download`` commands (see the module docstring)."""
    with running(Path(folder)) as (state, env):
        print(json.dumps(env), flush=True)
        for line in sys.stdin:
            if not line.strip():
                continue
            command = json.loads(line)
            download_as_a_colleague(state, command["download"], Path(command["to"]))
            print("ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
