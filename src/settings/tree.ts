/**
 * The complete settings tree: every key of the specification's settings report, with its default.
 * Environment variable of a key: BATON_ + its path upper-cased and joined by "_".
 */
import * as S from "./define.ts"

const service = (enabled: boolean, description: string) => S.boolean(enabled, `Whether the ${description} service runs.`)
const loopSeconds = (seconds: number, description: string) =>
  S.number(seconds, `Seconds between two iterations of the ${description} service.`, { min: 0 })

export const tree = {
  home: S.string("~/.baton", "The Baton home directory; the embedded database lives under it."),
  server: {
    api: {
      auth_string: S.secret("HTTP Basic credential (user:password) every API request must carry."),
      host: S.string("127.0.0.1", "Address the API server listens on."),
      port: S.integer(4200, "Port the API server listens on.", { min: 0, max: 65535 }),
      base_path: S.string("/v2/api", "Path prefix the API is served under."),
      default_limit: S.integer(200, "Default and maximum page size of filter operations.", { min: 1 }),
      keepalive_timeout: S.integer(5, "Seconds an idle keep-alive connection is kept open.", { min: 0 }),
      csrf_protection_enabled: S.boolean(false, "Whether state-changing requests need a CSRF token."),
      csrf_token_expiration: S.duration("PT1H", "How long a CSRF token stays valid."),
      cors_allowed_origins: S.string("*", "Comma-separated origins allowed by CORS."),
      cors_allowed_methods: S.string("*", "Comma-separated methods allowed by CORS."),
      cors_allowed_headers: S.string("*", "Comma-separated headers allowed by CORS.")
    },
    database: {
      connection_url: S.secret("PostgreSQL connection URL; when unset (and no host is set) the embedded database is used."),
      host: S.optionalString("PostgreSQL host, used when connection_url is unset."),
      port: S.optionalInteger("PostgreSQL port."),
      user: S.optionalString("PostgreSQL user."),
      name: S.optionalString("PostgreSQL database name."),
      password: S.secret("PostgreSQL password."),
      migrate_on_start: S.boolean(true, "Whether pending migrations are applied at start."),
      timeout: S.number(10, "Statement timeout in seconds.", { min: 0 }),
      connection_timeout: S.number(5, "Connection timeout in seconds.", { min: 0 }),
      sqlalchemy: {
        pool_size: S.integer(5, "Connections kept in the pool.", { min: 1 }),
        max_overflow: S.integer(10, "Connections allowed beyond pool_size under load.", { min: 0 }),
        pool_timeout: S.number(30, "Seconds to wait for a free connection.", { min: 0 }),
        pool_recycle: S.integer(3600, "Seconds after which a connection is replaced.", { min: 0 })
      }
    },
    services: {
      scheduler: {
        enabled: service(true, "scheduler"),
        loop_seconds: loopSeconds(60, "scheduler")
      }
    }
  }
} satisfies S.Tree
