// Command nats-creds writes what a nats-server in operator mode needs and the credentials files its users sign in
// with, using the NATS project's own jwt and nkeys libraries: the tests of LAKELEDGER__NATS_CREDS_FILE start a real
// nats-server with this configuration (make nats-deps builds it into .cache/nats-creds).
//
//	nats-creds <dir>  writes <dir>/server.conf (the operator, its account preloaded with JetStream on, and the system
//	                  account JetStream needs),
//	                  <dir>/user.creds (a user of that account) and <dir>/stranger.creds (a user of an account the
//	                  server does not know).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "nats-creds:", err)
		os.Exit(1)
	}
	return v
}

func account(operator nkeys.KeyPair, name string, jetStream bool) (nkeys.KeyPair, string, string) {
	kp := must(nkeys.CreateAccount())
	pub := must(kp.PublicKey())
	claims := jwt.NewAccountClaims(pub)
	claims.Name = name
	if jetStream {
		claims.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1,
			Consumer: -1}
	}
	return kp, pub, must(claims.Encode(operator))
}

func creds(accountKey nkeys.KeyPair, name string) []byte {
	kp := must(nkeys.CreateUser())
	claims := jwt.NewUserClaims(must(kp.PublicKey()))
	claims.Name = name
	token := must(claims.Encode(accountKey))
	return must(jwt.FormatUserConfig(token, must(kp.Seed())))
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nats-creds <dir>")
		os.Exit(2)
	}
	dir := os.Args[1]
	operator := must(nkeys.CreateOperator())
	operatorClaims := jwt.NewOperatorClaims(must(operator.PublicKey()))
	operatorClaims.Name = "lakeledger-tests"
	operatorJWT := must(operatorClaims.Encode(operator))
	accountKey, accountPub, accountJWT := account(operator, "lakeledger", true)
	// JetStream in operator mode needs a system account
	_, systemPub, systemJWT := account(operator, "SYS", false)
	stranger := must(nkeys.CreateOperator())
	strangerAccount, _, _ := account(stranger, "unknown", true)
	conf := fmt.Sprintf("operator: %q\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n  %s: %q\n  %s: %q\n}\n",
		operatorJWT, systemPub, accountPub, accountJWT, systemPub, systemJWT)
	for name, body := range map[string][]byte{
		"server.conf": []byte(conf), "user.creds": creds(accountKey, "publisher"),
		"stranger.creds": creds(strangerAccount, "stranger"),
	} {
		must(0, os.WriteFile(filepath.Join(dir, name), body, 0o600))
	}
}
