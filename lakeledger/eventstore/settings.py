from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlparse


@dataclass(frozen=True)
class PostgresSettings:
    host: str
    port: int
    dbname: str
    user: str
    password: str

    @classmethod
    def from_url(cls, url: str) -> "PostgresSettings":
        """Accepts postgresql://user:pass@host:port/db, with ``?host=/socket/dir`` for Unix sockets."""
        parsed = urlparse(url)
        if parsed.scheme not in ("postgres", "postgresql"):
            raise ValueError(f"Not a Postgres URL: {url}")
        query = parse_qs(parsed.query)
        host = query.get("host", [parsed.hostname or "localhost"])[0]
        return cls(
            host=host,
            port=parsed.port or int(query.get("port", ["5432"])[0]),
            dbname=unquote(parsed.path.lstrip("/")) or "postgres",
            user=unquote(parsed.username or "postgres"),
            password=unquote(parsed.password or ""),
        )

    def conninfo(self) -> str:
        parts = {"host": self.host, "port": str(self.port), "dbname": self.dbname, "user": self.user}
        if self.password:
            parts["password"] = self.password
        return " ".join(f"{k}='{_escape(v)}'" for k, v in parts.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")
