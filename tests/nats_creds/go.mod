module lakeledger/tests/nats_creds

go 1.26

require (
	github.com/nats-io/jwt/v2 v2.8.3
	github.com/nats-io/nkeys v0.4.17
)

require (
	golang.org/x/crypto v0.52.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
