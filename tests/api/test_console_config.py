"""What the web console is told about this server (GET /ui/config.json): with authentication off, nothing to sign
in with. (With an OpenID provider, tests/e2e/test_console.py signs in through it.)"""


def test_the_console_is_told_authentication_is_off(client):
    r = client.get("/ui/config.json")
    assert r.status_code == 200, r.text
    assert r.json() == {"authentication": False}
