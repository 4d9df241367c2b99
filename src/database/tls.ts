/**
 * TLS to a PostgreSQL server: the settings (`server.database.sqlalchemy.connect_args.tls`) and the
 * connection URL's libpq parameters (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`, `sslpassword`)
 * made into node-postgres's `ssl` option, with libpq's meaning of each mode:
 *
 * - `disable`, `allow`: no TLS (`allow` never asks for it: node-postgres cannot fall back);
 * - `prefer`, `require`: TLS; the certificate is not checked unless a CA file is given, which makes
 *   them `verify-ca`, as in libpq (`prefer` does not fall back to plain text either);
 * - `verify-ca`: TLS, the chain checked against the CA file, the host name not;
 * - `verify-full`: TLS, the chain checked (against the CA file, else the system's CAs) and the
 *   certificate's names against the host connected to.
 *
 * node-postgres reads these parameters its own way (its `require` verifies the certificate, and a
 * URL's parameters override the options it is given), so they are taken out of the URL it gets.
 * A URL without `sslmode` leaves the choice to the settings: `tls.enabled` is `verify-full`, or
 * `verify-ca` with `check_hostname` false. The URL's files win over the settings' files.
 *
 * Files are read, and the TLS context made, once, before connecting: a file that cannot be read or
 * a key that does not match its certificate is a start-up error that says so.
 */
import * as fs from "node:fs"
import type * as tls from "node:tls"
import { createSecureContext } from "node:tls"
import { Either } from "effect"
import type { SettingsValue } from "../settings/settings.ts"

type TlsSettings = SettingsValue["server"]["database"]["sqlalchemy"]["connect_args"]["tls"]

const MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const
type SslMode = (typeof MODES)[number]

/** What the URL may say about TLS; none of it reaches node-postgres. */
const TLS_PARAMETERS = ["sslmode", "ssl", "sslrootcert", "sslcert", "sslkey", "sslpassword", "uselibpqcompat"]

const SETTING = "server.database.sqlalchemy.connect_args.tls"

export interface ServerTls {
  /** The connection URL without its TLS parameters. */
  readonly url: string
  /** node-postgres's `ssl` option; always given, so that node-postgres never reads PGSSLMODE itself. */
  readonly ssl: false | tls.ConnectionOptions
}

class Refused {
  constructor(readonly message: string) {}
}

const isMode = (value: string): value is SslMode => (MODES as ReadonlyArray<string>).includes(value)

/** The file at `path`, named `what` in the error that says it cannot be read. */
const read = (path: string, what: string): string => {
  try {
    return fs.readFileSync(path, "utf8")
  } catch (cause) {
    const message = cause instanceof Error ? cause.message.replace(/, open .*$/, "") : String(cause)
    throw new Refused(`TLS to PostgreSQL: cannot read ${what} (${path}): ${message}`)
  }
}

const nonEmpty = (value: string | null | undefined) => (value === null || value === undefined || value === "" ? undefined : value)

const resolve = (settings: TlsSettings, connectionUrl: string): ServerTls => {
  const url = new URL(connectionUrl)
  const param = (name: string) => nonEmpty(url.searchParams.get(name))
  // asyncpg (and so SQLAlchemy URLs written for it) calls sslmode `ssl`.
  const modeParam = param("sslmode") ?? param("ssl")
  const rootParam = param("sslrootcert")
  const certParam = param("sslcert")
  const keyParam = param("sslkey")
  const passphrase = param("sslpassword")
  for (const name of TLS_PARAMETERS) url.searchParams.delete(name)
  const stripped = url.toString()

  let mode: SslMode
  if (modeParam !== undefined) {
    if (!isMode(modeParam)) {
      throw new Refused(`TLS to PostgreSQL: the connection URL's sslmode must be one of ${MODES.join(", ")} (it is "${modeParam}")`)
    }
    mode = modeParam
  } else if (rootParam === "system") {
    mode = "verify-full"
  } else if (rootParam !== undefined || certParam !== undefined || keyParam !== undefined) {
    // libpq's default mode, which these parameters are written for.
    mode = "prefer"
  } else {
    mode = !settings.enabled ? "disable" : settings.check_hostname ? "verify-full" : "verify-ca"
  }
  if (mode === "disable" || mode === "allow") return { url: stripped, ssl: false }

  // libpq's "system": the system's trusted CAs, which only make sense with the host name checked.
  const systemRoots = rootParam === "system"
  if (systemRoots && mode !== "verify-full") {
    throw new Refused(`TLS to PostgreSQL: the connection URL's sslrootcert=system needs sslmode=verify-full (it is ${mode})`)
  }
  const caPath = systemRoots ? undefined : rootParam ?? nonEmpty(settings.ca_file)
  const caName = rootParam !== undefined ? "the connection URL's sslrootcert" : `${SETTING}.ca_file`
  const certPath = certParam ?? nonEmpty(settings.cert_file)
  const keyPath = keyParam ?? nonEmpty(settings.key_file)
  if (mode === "verify-ca" && caPath === undefined) {
    // Against the public CAs, verify-ca would accept a certificate any of them issued to anyone.
    throw new Refused(
      `TLS to PostgreSQL: verify-ca needs a CA file (${SETTING}.ca_file or the URL's sslrootcert); ` +
        `to trust the system's CAs, check the host name too (verify-full, or ${SETTING}.check_hostname=true)`
    )
  }
  if ((certPath === undefined) !== (keyPath === undefined)) {
    throw new Refused(
      `TLS to PostgreSQL: a client certificate needs its key and a key its certificate (${SETTING}.cert_file and key_file, or the URL's sslcert and sslkey)`
    )
  }
  const ca = caPath === undefined ? undefined : read(caPath, caName)
  // Node takes a CA that holds no certificate without a word, and then trusts nothing.
  if (ca !== undefined && !ca.includes("-----BEGIN CERTIFICATE-----")) {
    throw new Refused(`TLS to PostgreSQL: ${caName} (${caPath}) holds no PEM certificate`)
  }
  const cert = certPath === undefined ? undefined : read(certPath, certParam !== undefined ? "the connection URL's sslcert" : `${SETTING}.cert_file`)
  const key = keyPath === undefined ? undefined : read(keyPath, keyParam !== undefined ? "the connection URL's sslkey" : `${SETTING}.key_file`)

  const verifies = mode === "verify-ca" || mode === "verify-full" || ca !== undefined
  const options: tls.ConnectionOptions = {
    minVersion: "TLSv1.2",
    rejectUnauthorized: verifies,
    ...(ca !== undefined ? { ca } : {}),
    ...(cert !== undefined && key !== undefined ? { cert, key } : {}),
    ...(passphrase !== undefined ? { passphrase } : {}),
    // Every mode but verify-full leaves the host name unchecked (the chain still is when `verifies`).
    ...(mode !== "verify-full" ? { checkServerIdentity: () => undefined } : {})
  }
  try {
    createSecureContext(options)
  } catch (cause) {
    throw new Refused(`TLS to PostgreSQL: the CA, client certificate and key given cannot be used: ${(cause as Error).message}`)
  }
  return { url: stripped, ssl: options }
}

/**
 * The URL node-postgres is given and its `ssl` option, for `connectionUrl` under `settings`; or the
 * one line that says why they cannot be made.
 */
export const serverTls = (settings: TlsSettings, connectionUrl: string): Either.Either<ServerTls, string> => {
  try {
    return Either.right(resolve(settings, connectionUrl))
  } catch (error) {
    if (error instanceof Refused) return Either.left(error.message)
    throw error
  }
}

/** Node's codes for a certificate the client would not accept (chain, dates, names). */
const CERTIFICATE_CODES = /^(ERR_TLS_CERT_ALTNAME_INVALID|.*CERT.*|UNABLE_TO_.*|.*SELF_SIGNED.*)$/

/** Whether a failure to connect is the server's certificate being refused. */
export const isCertificateRefused = (cause: unknown): boolean => {
  let current: unknown = cause
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === "string" && CERTIFICATE_CODES.test(code)) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}
