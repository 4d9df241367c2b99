/**
 * TLS on the test run's PostgreSQL server (TEST_DATABASE_URL), for test/database/tls.test.ts: the
 * server is given the test certificates of tls/postgres/ (a CA, a server certificate it signed for
 * 127.0.0.1 only, and the CA as the one client certificates are checked against) and TLS is turned
 * on. Nothing of the test machine's file system is needed: the server writes the files itself
 * (COPY … TO PROGRAM, as a superuser), into its data directory, so this works wherever it runs.
 *
 * TLS is left on afterwards: clients that do not ask for it are not affected (the server only asks
 * for a client certificate, and checks it, when a client sends one), and turning it off again could
 * pull it from under another test file running at the same time. The files are always the same, so
 * two runs at once write the same bytes, and a run that finds them in place changes nothing.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "tls", "postgres")

/** A file of tls/postgres/: ca.crt, other-ca.crt, server.crt, server.key, client.crt, client.key. */
export const tlsFile = (name: string) => path.join(DIR, name)

const text = (name: string) => fs.readFileSync(tlsFile(name), "utf8")

const quote = (value: string) => `'${value.replace(/'/g, "''")}'`

const shellQuote = (value: string) => `'${value.replace(/'/g, "'\\''")}'`

/**
 * Writes `content` to `file` on the server, readable by its owner only (PostgreSQL refuses a key
 * file others may read, and COPY … TO a file leaves it readable by all: hence a program with its
 * umask), one row per line (PEM holds nothing COPY's text format escapes).
 */
const writeOnServer = (admin: pg.Client, file: string, content: string) => {
  const lines = content.split("\n").filter((line) => line !== "")
  // Written beside and moved into place: a reload never reads half a file, and the mode is new.
  const program = `umask 077 && cat > ${shellQuote(`${file}.new`)}.$$ && mv ${shellQuote(`${file}.new`)}.$$ ${shellQuote(file)}`
  return admin.query(
    `COPY (SELECT line FROM unnest(ARRAY[${lines.map(quote).join(", ")}]::text[]) WITH ORDINALITY AS t(line, n) ORDER BY n) TO PROGRAM ${quote(program)}`
  )
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Whether a new connection to `url` is encrypted by the server's certificate, signed by the test CA. */
const tlsAnswers = async (url: string): Promise<boolean> => {
  // The chain only: the admin URL's host may be a name the certificate does not carry.
  const client = new pg.Client({ connectionString: url, ssl: { ca: text("ca.crt"), checkServerIdentity: () => undefined } })
  client.on("error", () => undefined)
  try {
    await client.connect()
    const { rows } = await client.query<{ ssl: boolean }>("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
    return rows[0]?.ssl === true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** Turns TLS on, with the test certificates, on the server of `adminUrl` (a superuser's URL). */
export const ensureServerTls = async (adminUrl: string): Promise<void> => {
  const admin = new pg.Client({ connectionString: adminUrl, ssl: false })
  await admin.connect()
  try {
    const { rows: [current] } = await admin.query<{ ssl: string; dir: string; cert: string | null; ca: string | null }>(
      `SELECT current_setting('ssl') AS ssl, current_setting('data_directory') AS dir,
         pg_read_file(current_setting('ssl_cert_file'), 0, 100000, true) AS cert,
         CASE WHEN current_setting('ssl_ca_file') = '' THEN NULL
           ELSE pg_read_file(current_setting('ssl_ca_file'), 0, 100000, true) END AS ca`
    )
    const inPlace = current!.ssl === "on" && current!.cert === text("server.crt") && current!.ca === text("ca.crt")
    if (inPlace && (await tlsAnswers(adminUrl))) return
    const files = { ssl_cert_file: "baton-test-server.crt", ssl_key_file: "baton-test-server.key", ssl_ca_file: "baton-test-ca.crt" }
    await writeOnServer(admin, path.posix.join(current!.dir, files.ssl_cert_file), text("server.crt"))
    await writeOnServer(admin, path.posix.join(current!.dir, files.ssl_key_file), text("server.key"))
    await writeOnServer(admin, path.posix.join(current!.dir, files.ssl_ca_file), text("ca.crt"))
    // One statement each: ALTER SYSTEM refuses to run in a transaction block.
    for (const [setting, file] of Object.entries(files)) {
      await admin.query(`ALTER SYSTEM SET ${setting} = ${quote(path.posix.join(current!.dir, file))}`)
    }
    await admin.query("ALTER SYSTEM SET ssl = on")
    // The postmaster reloads in its own time (a reload that fails keeps the previous TLS setup):
    // reload until TLS answers with the test certificate.
    const deadline = Date.now() + 15_000
    while (true) {
      await admin.query("SELECT pg_reload_conf()")
      if (await tlsAnswers(adminUrl)) return
      if (Date.now() > deadline) {
        throw new Error("PostgreSQL does not answer over TLS with the test certificate (see its log: the key file's mode, ssl settings)")
      }
      await sleep(200)
    }
  } finally {
    await admin.end()
  }
}
