#!/bin/sh
# Makes the test-only certificates of test/database/tls.test.ts (valid for a century; run again to
# replace them): a CA, a server certificate it signed for 127.0.0.1 only (no host name, so
# "localhost" is a host name mismatch), a client certificate it signed, and another CA that signed
# nothing here (the wrong CA). The CA keys are not kept.
set -eu
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
days=36500
ca() {
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/$1.key" -out "$1.crt" -days $days -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
leaf() {
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$work/$1.csr" -subj "/CN=$2" 2>/dev/null
  printf '%s\n' "basicConstraints=CA:FALSE" "$3" > "$work/$1.ext"
  openssl x509 -req -in "$work/$1.csr" -CA ca.crt -CAkey "$work/ca.key" -CAcreateserial -out "$1.crt" -days $days \
    -extfile "$work/$1.ext" 2>/dev/null
  chmod 600 "$1.key"
}
ca ca "Baton test CA"
ca other-ca "Baton test other CA"
leaf server baton-test-postgres "subjectAltName=IP:127.0.0.1"
leaf client baton-test-client "extendedKeyUsage=clientAuth"
rm -f ca.srl
