"""How the processes log: ``LAKELEDGER__LOG_FORMAT=text`` (a line for people) or ``json`` (one JSON object per
line, for a log pipeline). A request's line (lakeledger/operations/observed_requests.py) carries its fields at the top
level of the object; nothing of a request's headers, path or body is logged, so no token or credential can be."""

import json
import logging
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        request = getattr(record, "request", None)
        if isinstance(request, dict):
            line.update(request)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def configure(level: str, form: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines() if form == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # botocore's debug log prints whole responses, STS AssumeRole's session credentials among them: never below INFO
    for name in ("boto3", "botocore", "s3transfer"):
        logging.getLogger(name).setLevel(max(root.level, logging.INFO))
