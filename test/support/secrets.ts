/** A setting of every secret kind, each with a value a test can look for in what Baton prints. */
export const SECRETS = {
  BATON_SERVER_API_AUTH_STRING: "admin:auth-secret-1",
  BATON_API_AUTH_STRING: "admin:auth-secret-2",
  BATON_API_KEY: "key-secret-3",
  BATON_SERVER_DATABASE_CONNECTION_URL: "postgresql://baton:url-secret-4@db.internal:5432/baton",
  BATON_SERVER_DATABASE_PASSWORD: "password-secret-5",
  BATON_SERVER_EVENTS_REDIS_URL: "redis://:redis-secret-6@cache.internal:6379/0"
}
export const SECRET_VALUES = ["auth-secret-1", "auth-secret-2", "key-secret-3", "url-secret-4", "password-secret-5", "redis-secret-6"]
