/**
 * TLS to PostgreSQL, with libpq's meaning of sslmode, against the test run's real server with TLS
 * turned on by the test (support/postgres-tls.ts: a test CA, a server certificate for 127.0.0.1
 * only, client certificates checked against the CA), reached through a TCP proxy so that the same
 * server is also "localhost", a name its certificate does not carry. Settings that cannot make a
 * TLS setup (a file that cannot be read, a key that is not the certificate's) stop start-up before
 * any connection, so those cases run on every database.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import pg from "pg"
import { layerFromSettings } from "../../src/database/client.ts"
import { apiServerWith, DatabaseLive } from "../../src/server.ts"
import { layer as settingsLayer, type SettingsOverrides } from "../../src/settings/settings.ts"
import { onServer, scopedDatabase } from "../support/database.ts"
import { ensureServerTls, tlsFile } from "../support/postgres-tls.ts"
import { ensureBundle, failedStart, scopedEmptyHome } from "../support/server-process.ts"
import { request } from "../support/server.ts"
import { scopedTcpProxy } from "../support/tcp-proxy.ts"

const TLS = "server.database.sqlalchemy.connect_args.tls"

/** The database layer the settings make, built in the test's scope; its failure when it cannot connect. */
const connect = (overrides: SettingsOverrides) =>
  Layer.build(layerFromSettings).pipe(
    Effect.provide(settingsLayer({ "server.database.sqlalchemy.pool_timeout": 5, ...overrides }))
  )

/** What PostgreSQL says of the connection a statement runs on. */
const connectionTls = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ ssl: boolean; client_dn: string | null }>`SELECT ssl, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()`,
    (rows) => rows[0]!
  )
)

/** Connects with `overrides` and tells how the connection is protected. */
const tlsWith = (overrides: SettingsOverrides) =>
  Effect.flatMap(connect(overrides), (context) => Effect.provide(connectionTls, context))

/** The message start-up stops with under `overrides`. */
const refusal = (overrides: SettingsOverrides) => Effect.map(Effect.flip(connect(overrides)), (error) => error.message)

/** `url` with the query parameters `params`. */
const withParams = (url: string, params: Record<string, string>) => {
  const out = new URL(url)
  for (const [name, value] of Object.entries(params)) out.searchParams.set(name, value)
  return out.toString()
}

describe("TLS settings that cannot be used stop start-up with one line, before connecting", () => {
  // Nothing listens on port 1: a run that got as far as connecting would say "Cannot connect".
  const nowhere = "postgresql://baton:secret@127.0.0.1:1/baton"

  it.scoped("a CA, client certificate or key file that is missing or not a file", () =>
    Effect.gen(function* () {
      expect(yield* refusal({ "server.database.connection_url": nowhere, [`${TLS}.enabled`]: true, [`${TLS}.ca_file`]: "/nonexistent/ca.crt" }))
        .toBe(`TLS to PostgreSQL: cannot read ${TLS}.ca_file (/nonexistent/ca.crt): ENOENT: no such file or directory`)
      expect(yield* refusal({
        "server.database.connection_url": nowhere,
        [`${TLS}.enabled`]: true,
        [`${TLS}.cert_file`]: tlsFile("client.crt"),
        [`${TLS}.key_file`]: "/nonexistent/client.key"
      })).toBe(`TLS to PostgreSQL: cannot read ${TLS}.key_file (/nonexistent/client.key): ENOENT: no such file or directory`)
      // A directory where the certificate should be: unreadable as a file.
      const directory = tlsFile("")
      expect(yield* refusal({
        "server.database.connection_url": withParams(nowhere, { sslmode: "require", sslcert: directory, sslkey: tlsFile("client.key") })
      })).toMatch(/^TLS to PostgreSQL: cannot read the connection URL's sslcert \(.*\): EISDIR: /)
    }))

  it.scoped("a CA file without a certificate, a key that is not the certificate's, a certificate without its key", () =>
    Effect.gen(function* () {
      expect(yield* refusal({ "server.database.connection_url": nowhere, [`${TLS}.enabled`]: true, [`${TLS}.ca_file`]: tlsFile("client.key") }))
        .toBe(`TLS to PostgreSQL: ${TLS}.ca_file (${tlsFile("client.key")}) holds no PEM certificate`)
      expect(yield* refusal({
        "server.database.connection_url": nowhere,
        [`${TLS}.enabled`]: true,
        [`${TLS}.cert_file`]: tlsFile("client.crt"),
        [`${TLS}.key_file`]: tlsFile("server.key")
      })).toMatch(/^TLS to PostgreSQL: the CA, client certificate and key given cannot be used: .*key values mismatch$/)
      expect(yield* refusal({ "server.database.connection_url": nowhere, [`${TLS}.enabled`]: true, [`${TLS}.cert_file`]: tlsFile("client.crt") }))
        .toMatch(/^TLS to PostgreSQL: a client certificate needs its key and a key its certificate /)
    }))

  it.scoped("verify-ca without a CA file, an unknown sslmode, sslrootcert=system without verify-full", () =>
    Effect.gen(function* () {
      expect(yield* refusal({ "server.database.connection_url": withParams(nowhere, { sslmode: "verify-ca" }) }))
        .toMatch(/^TLS to PostgreSQL: verify-ca needs a CA file /)
      // check_hostname off is verify-ca: the same.
      expect(yield* refusal({ "server.database.connection_url": nowhere, [`${TLS}.enabled`]: true, [`${TLS}.check_hostname`]: false }))
        .toMatch(/^TLS to PostgreSQL: verify-ca needs a CA file /)
      expect(yield* refusal({ "server.database.connection_url": withParams(nowhere, { sslmode: "verify" }) }))
        .toBe(`TLS to PostgreSQL: the connection URL's sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full (it is "verify")`)
      expect(yield* refusal({ "server.database.connection_url": withParams(nowhere, { sslmode: "require", sslrootcert: "system" }) }))
        .toBe("TLS to PostgreSQL: the connection URL's sslrootcert=system needs sslmode=verify-full (it is require)")
    }))

  it.scoped("valid settings go on to connect (and only then fail, here: nothing listens)", () =>
    Effect.gen(function* () {
      const message = yield* refusal({
        "server.database.connection_url": withParams(nowhere, { sslmode: "verify-full", sslrootcert: tlsFile("ca.crt") }),
        [`${TLS}.cert_file`]: tlsFile("client.crt"),
        [`${TLS}.key_file`]: tlsFile("client.key")
      })
      expect(message).toMatch(/^Cannot connect to PostgreSQL at 127\.0\.0\.1:1\/baton: /)
      expect(message).not.toContain("secret")
    }))
})

interface Target {
  /** The test database through the proxy, by the address the server's certificate names. */
  readonly byAddress: string
  /** The same, by a name the certificate does not carry. */
  readonly byName: string
  /** The run's own URL, for looking at connections from outside. */
  readonly admin: string
  readonly database: string
}

/** TLS on the server, a database of this test's own, and a proxy in front of it. */
const target = Effect.gen(function* () {
  const admin = process.env.TEST_DATABASE_URL!
  yield* Effect.promise(() => ensureServerTls(admin))
  const database = yield* scopedDatabase({ migrated: true })
  const direct = new URL(database.url!)
  const proxy = yield* scopedTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) })
  const at = (host: string) => {
    const url = new URL(database.url!)
    url.hostname = host
    url.port = String(proxy.port)
    return url.toString()
  }
  return { byAddress: at("127.0.0.1"), byName: at("localhost"), admin, database: direct.pathname.slice(1) } satisfies Target
})

/** How the connections to `database` are protected, as PostgreSQL shows them, by application name. */
const connectionsOf = (admin: string, database: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: admin, ssl: false })
    await client.connect()
    try {
      const { rows } = await client.query<{ application_name: string; ssl: boolean; client_dn: string | null }>(
        `SELECT a.application_name, s.ssl, s.client_dn FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
         WHERE a.datname = $1 ORDER BY a.application_name`,
        [database]
      )
      return rows
    } finally {
      await client.end()
    }
  })

describe.skipIf(!onServer())("TLS to PostgreSQL (needs TEST_DATABASE_URL: the embedded database is reached over a local socket, without TLS)", () => {
  it.scopedLive("verify-full with the right CA and a client certificate: the API works, and every connection (pool, leadership) is encrypted and presents the certificate", () =>
    Effect.gen(function* () {
      const db = yield* target
      const server = apiServerWith({ services: true }).pipe(
        Layer.provideMerge(DatabaseLive),
        Layer.provideMerge(settingsLayer({
          "server.api.host": "127.0.0.1",
          "server.api.port": 0,
          "server.database.connection_url": db.byAddress,
          "server.database.sqlalchemy.connect_args.application_name": "baton over tls",
          [`${TLS}.enabled`]: true,
          [`${TLS}.ca_file`]: tlsFile("ca.crt"),
          [`${TLS}.cert_file`]: tlsFile("client.crt"),
          [`${TLS}.key_file`]: tlsFile("client.key")
        }))
      )
      yield* Effect.gen(function* () {
        const created = yield* request("POST", "/flows/", { body: { name: "over-tls" } })
        expect(created.status).toBe(201)
        const read = yield* request("GET", `/flows/${created.body.id}`)
        expect([read.status, read.body.name]).toEqual([200, "over-tls"])
        // The leadership session connects beside the pool: wait for it.
        let connections = yield* connectionsOf(db.admin, db.database)
        for (let i = 0; i < 50 && !connections.some((c) => c.application_name === "baton leadership"); i++) {
          yield* Effect.sleep("100 millis")
          connections = yield* connectionsOf(db.admin, db.database)
        }
        const names = new Set(connections.map((c) => c.application_name))
        expect([...names].sort()).toEqual(["baton leadership", "baton over tls"])
        for (const connection of connections) {
          expect(connection).toEqual({ application_name: connection.application_name, ssl: true, client_dn: "/CN=baton-test-client" })
        }
      }).pipe(Effect.provide(server), Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Error))
    }), 60_000)

  it.scopedLive("the wrong CA: the server does not start, and says why in one line", () =>
    Effect.gen(function* () {
      const db = yield* target
      const home = yield* scopedEmptyHome
      yield* Effect.promise(() => ensureBundle())
      const run = yield* Effect.promise(() =>
        failedStart({
          home,
          databaseUrl: db.byAddress,
          env: { BATON_SERVER_DATABASE_SQLALCHEMY_CONNECT_ARGS_TLS_ENABLED: "true", BATON_SERVER_DATABASE_SQLALCHEMY_CONNECT_ARGS_TLS_CA_FILE: tlsFile("other-ca.crt") }
        })
      )
      expect(run.code).toBe(1)
      expect(run.stdout).toBe("")
      const lines = run.stderr.split("\n").filter((line) => line !== "")
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(
        new RegExp(`^Cannot connect to PostgreSQL at 127\\.0\\.0\\.1:\\d+/${db.database}: .*certificate.* \\(the server's TLS certificate was refused: `)
      )
    }), 120_000)

  it.scopedLive("sslmode=require without a CA: encrypted, the certificate not checked (node-postgres alone would refuse it)", () =>
    Effect.gen(function* () {
      const db = yield* target
      expect(yield* tlsWith({ "server.database.connection_url": withParams(db.byAddress, { sslmode: "require" }) }))
        .toEqual({ ssl: true, client_dn: null })
      // asyncpg's spelling, as SQLAlchemy URLs carry it.
      expect(yield* tlsWith({ "server.database.connection_url": withParams(db.byName, { ssl: "require" }) }))
        .toEqual({ ssl: true, client_dn: null })
      // With a CA, require checks the chain (libpq): the wrong CA is refused.
      expect(yield* refusal({ "server.database.connection_url": withParams(db.byAddress, { sslmode: "require", sslrootcert: tlsFile("other-ca.crt") }) }))
        .toMatch(/certificate.* \(the server's TLS certificate was refused: /)
    }))

  it.scopedLive("a host name the certificate does not carry: refused under verify-full, accepted under verify-ca", () =>
    Effect.gen(function* () {
      const db = yield* target
      const ca = tlsFile("ca.crt")
      expect(yield* tlsWith({ "server.database.connection_url": withParams(db.byAddress, { sslmode: "verify-full", sslrootcert: ca }) }))
        .toEqual({ ssl: true, client_dn: null })
      const refused = yield* refusal({ "server.database.connection_url": withParams(db.byName, { sslmode: "verify-full", sslrootcert: ca }) })
      expect(refused).toMatch(/^Cannot connect to PostgreSQL at localhost:\d+\/\w+: Hostname\/IP does not match certificate's altnames: /)
      expect(refused).toContain("(the server's TLS certificate was refused: ")
      expect(yield* tlsWith({ "server.database.connection_url": withParams(db.byName, { sslmode: "verify-ca", sslrootcert: ca }) }))
        .toEqual({ ssl: true, client_dn: null })
      // The settings' way of saying the same: check_hostname.
      expect(yield* refusal({ "server.database.connection_url": db.byName, [`${TLS}.enabled`]: true, [`${TLS}.ca_file`]: ca }))
        .toMatch(/Hostname\/IP does not match certificate's altnames/)
      expect(yield* tlsWith({ "server.database.connection_url": db.byName, [`${TLS}.enabled`]: true, [`${TLS}.ca_file`]: ca, [`${TLS}.check_hostname`]: false }))
        .toEqual({ ssl: true, client_dn: null })
    }))

  it.scopedLive("the URL's sslcert and sslkey are presented; its sslmode wins over the settings", () =>
    Effect.gen(function* () {
      const db = yield* target
      expect(yield* tlsWith({
        "server.database.connection_url": withParams(db.byAddress, {
          sslmode: "verify-full",
          sslrootcert: tlsFile("ca.crt"),
          sslcert: tlsFile("client.crt"),
          sslkey: tlsFile("client.key")
        })
      })).toEqual({ ssl: true, client_dn: "/CN=baton-test-client" })
      expect(yield* tlsWith({ "server.database.connection_url": withParams(db.byAddress, { sslmode: "disable" }), [`${TLS}.enabled`]: true }))
        .toEqual({ ssl: false, client_dn: null })
      // Without TLS settings or parameters: a plain connection, as before.
      expect(yield* tlsWith({ "server.database.connection_url": db.byAddress })).toEqual({ ssl: false, client_dn: null })
    }))
})
