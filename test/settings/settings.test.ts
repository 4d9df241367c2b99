import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Either, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { DOCS_PATH, renderConfigDocs } from "../../scripts/gen-config-docs.ts"
import {
  leaves,
  loadSettings,
  SettingsError,
  type SettingsOverrides,
  settingsReport
} from "../../src/settings/settings.ts"
import { at, keysAt } from "../support/tree.ts"

/** Loads settings from exactly these variables, so the real environment never leaks into a test. */
const load = (env: Record<string, string> = {}, overrides: SettingsOverrides = {}) =>
  loadSettings(overrides).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))


const failure = (env: Record<string, string>, overrides: SettingsOverrides = {}) =>
  Effect.flip(load(env, overrides)).pipe(
    Effect.tap((error) => Effect.sync(() => expect(error).toBeInstanceOf(SettingsError)))
  )

describe("settings defaults", () => {
  const expectedDefaults: ReadonlyArray<readonly [string, unknown]> = [
    ["debug_mode", false],
    ["ui_url", null],
    ["silence_api_url_misconfiguration", false],
    ["api.url", null],
    ["api.key", null],
    ["api.tls_insecure_skip_verify", false],
    ["api.request_timeout", 60],
    ["cli.colors", true],
    ["cli.prompt", true],
    ["cli.wrap_lines", true],
    ["client.max_retries", 5],
    ["client.retry_jitter_factor", 0.2],
    ["client.retry_extra_codes", "404,429,503"],
    ["client.csrf_support_enabled", true],
    ["client.custom_headers", {}],
    ["client.metrics.enabled", false],
    ["client.metrics.port", 4201],
    ["cloud.api_url", "https://api.prefect.cloud/api"],
    ["cloud.enable_orchestration_telemetry", true],
    ["cloud.max_log_size", 25000],
    ["cloud.ui_url", null],
    ["deployments.default_work_pool_name", null],
    ["deployments.default_docker_build_namespace", null],
    ["experiments.warn", true],
    ["experiments.plugins.enabled", false],
    ["experiments.plugins.allow", null],
    ["experiments.plugins.deny", null],
    ["experiments.plugins.setup_timeout_seconds", 20],
    ["experiments.plugins.safe_mode", false],
    ["flows.heartbeat_frequency", 31],
    ["flows.default_retries", 0],
    ["flows.default_retry_delay_seconds", 0],
    ["internal.logging_level", "ERROR"],
    ["logging.level", "INFO"],
    ["logging.log_prints", false],
    ["logging.colors", true],
    ["logging.to_api.enabled", true],
    ["logging.to_api.batch_interval", 2],
    ["logging.to_api.batch_size", 4000000],
    ["logging.to_api.max_log_size", 1000000],
    ["logging.to_api.when_missing_flow", "warn"],
    ["results.default_serializer", "pickle"],
    ["results.persist_by_default", false],
    ["results.default_storage_block", null],
    ["runner.process_limit", 5],
    ["runner.poll_frequency", 10],
    ["runner.server.enable", false],
    ["runner.server.host", "localhost"],
    ["runner.server.port", 8080],
    ["runner.server.log_level", "ERROR"],
    ["runner.server.missed_polls_tolerance", 2],
    ["server.logging_level", "WARNING"],
    ["server.analytics_enabled", true],
    ["server.register_blocks_on_start", true],
    ["server.deployment_schedule_max_scheduled_runs", 50],
    ["server.api.auth_string", null],
    ["server.api.host", "127.0.0.1"],
    ["server.api.port", 4200],
    ["server.api.base_path", "/v2/api"],
    ["server.api.default_limit", 200],
    ["server.api.keepalive_timeout", 5],
    ["server.api.csrf_protection_enabled", false],
    ["server.api.csrf_token_expiration", "PT1H"],
    ["server.api.cors_allowed_origins", "*"],
    ["server.api.max_parameter_size", 524288],
    ["server.concurrency.lease_storage", "memory"],
    ["server.concurrency.initial_deployment_lease_duration", 300],
    ["server.concurrency.maximum_concurrency_slot_wait_seconds", 30],
    ["server.database.sqlalchemy.connect_args.application_name", null],
    ["server.database.sqlalchemy.connect_args.statement_cache_size", null],
    ["server.database.sqlalchemy.connect_args.tls.enabled", false],
    ["server.database.sqlalchemy.connect_args.tls.ca_file", null],
    ["server.database.sqlalchemy.connect_args.tls.check_hostname", true],
    ["server.database.sqlalchemy.pool_size", 5],
    ["server.database.sqlalchemy.pool_recycle", 3600],
    ["server.database.sqlalchemy.pool_timeout", 30],
    ["server.database.sqlalchemy.max_overflow", 10],
    ["server.database.connection_url", null],
    ["server.database.driver", "postgresql+asyncpg"],
    ["server.database.port", null],
    ["server.database.password", null],
    ["server.database.echo", false],
    ["server.database.migrate_on_start", true],
    ["server.database.timeout", 10],
    ["server.database.connection_timeout", 5],
    ["server.deployments.concurrency_slot_wait_seconds", 30],
    ["server.docket.url", "memory://"],
    ["server.ephemeral.enabled", false],
    ["server.ephemeral.startup_timeout_seconds", 20],
    ["server.events.stream_out_enabled", true],
    ["server.events.related_resource_cache_ttl", "PT5M"],
    ["server.events.maximum_labels_per_resource", 500],
    ["server.events.maximum_related_resources", 100],
    ["server.events.maximum_size_bytes", 1500000],
    ["server.events.expired_bucket_buffer", "PT1M"],
    ["server.events.proactive_granularity", "PT5S"],
    ["server.events.retention_period", "P7D"],
    ["server.events.maximum_websocket_backfill", "PT15M"],
    ["server.events.websocket_backfill_page_size", 250],
    ["server.events.messaging_broker", "memory"],
    ["server.events.messaging_cache", "memory"],
    ["server.events.causal_ordering", "memory"],
    ["server.events.maximum_event_name_length", 1024],
    ["server.flow_run_graph.max_nodes", 10000],
    ["server.flow_run_graph.max_artifacts", 10000],
    ["server.logs.stream_out_enabled", false],
    ["server.logs.stream_publishing_enabled", false],
    ["server.tasks.tag_concurrency_slot_wait_seconds", 30],
    ["server.tasks.max_cache_key_length", 2000],
    ["server.tasks.scheduling.max_scheduled_queue_size", 1000],
    ["server.tasks.scheduling.max_retry_queue_size", 100],
    ["server.tasks.scheduling.pending_task_timeout", "PT0S"],
    ["server.ui.enabled", true],
    ["server.ui.v2_enabled", false],
    ["server.ui.api_url", null],
    ["server.ui.serve_base", "/"],
    ["server.ui.show_promotional_content", true],
    ["tasks.refresh_cache", false],
    ["tasks.default_retries", 0],
    ["tasks.default_persist_result", true],
    ["tasks.runner.thread_pool_max_workers", 1],
    ["tasks.runner.process_pool_max_workers", 1],
    ["tasks.scheduling.default_storage_block", null],
    ["tasks.scheduling.delete_failed_submissions", true],
    ["testing.test_mode", false],
    ["testing.unit_test_loop_debug", true],
    ["testing.test_setting", "FOO"],
    ["worker.debug_mode", false],
    ["worker.heartbeat_seconds", 30],
    ["worker.query_seconds", 10],
    ["worker.prefetch_seconds", 10],
    ["worker.enable_cancellation", false],
    ["worker.cancellation_poll_seconds", 120],
    ["worker.webserver.host", "0.0.0.0"],
    ["worker.webserver.port", 8080]
  ]

  it.effect("match the spec's settings report", () =>
    Effect.gen(function* () {
      const report = settingsReport(yield* load())
      for (const [key, expected] of expectedDefaults) {
        expect(at(report, key), key).toEqual(expected)
      }
    })
  )

  it.effect("keep the spec's nesting and order", () =>
    Effect.gen(function* () {
      const report = settingsReport(yield* load())
      expect(Object.keys(report)).toEqual([
        "home", "profiles_path", "debug_mode", "ui_url", "silence_api_url_misconfiguration",
        "api", "cli", "client", "cloud", "deployments", "experiments", "flows", "internal", "logging",
        "results", "runner", "server", "tasks", "testing", "worker"
      ])
      expect(keysAt(report, "server")).toEqual([
        "logging_level", "analytics_enabled", "metrics_enabled", "log_retryable_errors",
        "register_blocks_on_start", "memoize_block_auto_registration", "memo_store_path",
        "deployment_schedule_max_scheduled_runs", "api", "concurrency", "database", "deployments", "docket",
        "ephemeral", "events", "flow_run_graph", "logs", "services", "tasks", "ui"
      ])
      // The reference has more keys than the spec; the report shows exactly the spec's.
      expect(leaves.length).toBe(new Set(leaves.map((leaf) => leaf.key)).size)
    })
  )

  it.effect("give every service `enabled` and exactly the spec's keys", () =>
    Effect.gen(function* () {
      const report = settingsReport(yield* load())
      expect(at(report, "server.services")).toEqual({
        cancellation_cleanup: { enabled: true, loop_seconds: 20 },
        db_vacuum: { enabled: false, loop_seconds: 3600, retention_period: "P90D", batch_size: 200 },
        event_persister: {
          enabled: true,
          batch_size: 20,
          read_batch_size: 1,
          flush_interval: 5,
          batch_size_delete: 10000,
          queue_max_size: 50000,
          max_flush_retries: 5
        },
        event_logger: { enabled: false },
        foreman: {
          enabled: true,
          loop_seconds: 15,
          inactivity_heartbeat_multiple: 3,
          fallback_heartbeat_interval_seconds: 30,
          deployment_last_polled_timeout_seconds: 60,
          work_queue_last_polled_timeout_seconds: 60
        },
        late_runs: { enabled: true, loop_seconds: 5, after_seconds: "PT15S" },
        scheduler: {
          enabled: true,
          loop_seconds: 60,
          deployment_batch_size: 100,
          max_runs: 100,
          min_runs: 3,
          max_scheduled_time: "P100D",
          min_scheduled_time: "PT1H",
          insert_batch_size: 500,
          recent_deployments_loop_seconds: 5
        },
        pause_expirations: { enabled: true, loop_seconds: 5 },
        repossessor: { enabled: true, loop_seconds: 15 },
        task_run_recorder: { enabled: true, read_batch_size: 1, batch_size: 1, flush_interval: 5 },
        triggers: {
          enabled: true,
          read_batch_size: 1,
          pg_notify_reconnect_interval_seconds: 10,
          pg_notify_heartbeat_interval_seconds: 5
        }
      })
    })
  )

  it.effect("hold durations as Durations", () =>
    Effect.gen(function* () {
      const settings = yield* load()
      expect(Duration.toSeconds(settings.server.api.csrf_token_expiration)).toBe(3600)
      expect(Duration.toSeconds(settings.server.events.retention_period)).toBe(7 * 86_400)
      expect(Duration.toSeconds(settings.server.services.late_runs.after_seconds)).toBe(15)
    })
  )

  it("encode without error for every leaf, and decode back", () => {
    for (const leaf of leaves) {
      const encoded = Schema.encodeEither(leaf.setting.schema)(leaf.setting.default())
      expect(Either.isRight(encoded), leaf.key).toBe(true)
      if (Either.isRight(encoded)) {
        expect(Either.isRight(Schema.decodeUnknownEither(leaf.setting.schema)(encoded.right)), leaf.key).toBe(true)
      }
    }
  })

  it("have a one-sentence description each", () => {
    for (const leaf of leaves) {
      const text = leaf.setting.description
      expect(text, leaf.key).toMatch(/^\S.*\.$/)
      expect(text, leaf.key).not.toMatch(/\n/)
      expect(text.toLowerCase(), leaf.key).not.toContain("prefect")
    }
  })
})

describe("settings from the environment", () => {
  it.effect("override integers, booleans, numbers, lists, objects and levels", () =>
    Effect.gen(function* () {
      const settings = yield* load({
        BATON_SERVER_API_PORT: "8080",
        BATON_DEBUG_MODE: "true",
        BATON_SERVER_DATABASE_ECHO: "1",
        BATON_CLI_COLORS: "off",
        BATON_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS: "2.5",
        BATON_SERVER_SERVICES_FOREMAN_ENABLED: "false",
        BATON_EXPERIMENTS_PLUGINS_ALLOW: "alpha, beta",
        BATON_EXPERIMENTS_PLUGINS_DENY: '["gamma"]',
        BATON_CLIENT_CUSTOM_HEADERS: '{"X-Team":"ops"}',
        BATON_LOGGING_LEVEL: "debug",
        BATON_SERVER_DATABASE_SQLALCHEMY_CONNECT_ARGS_TLS_ENABLED: "yes",
        BATON_UI_URL: "http://ui.example"
      })
      expect(settings.server.api.port).toBe(8080)
      expect(settings.debug_mode).toBe(true)
      expect(settings.server.database.echo).toBe(true)
      expect(settings.cli.colors).toBe(false)
      expect(settings.server.services.scheduler.loop_seconds).toBe(2.5)
      expect(settings.server.services.foreman.enabled).toBe(false)
      expect(settings.experiments.plugins.allow).toEqual(["alpha", "beta"])
      expect(settings.experiments.plugins.deny).toEqual(["gamma"])
      expect(settings.client.custom_headers).toEqual({ "X-Team": "ops" })
      expect(settings.logging.level).toBe("DEBUG")
      expect(settings.server.database.sqlalchemy.connect_args.tls.enabled).toBe(true)
      expect(settings.ui_url).toBe("http://ui.example")
    })
  )

  it.effect("read durations as ISO 8601 or seconds and report them in ISO form", () =>
    Effect.gen(function* () {
      const settings = yield* load({
        BATON_SERVER_EVENTS_RETENTION_PERIOD: "P2D",
        BATON_SERVER_SERVICES_LATE_RUNS_AFTER_SECONDS: "90"
      })
      expect(Duration.toSeconds(settings.server.events.retention_period)).toBe(2 * 86_400)
      expect(Duration.toSeconds(settings.server.services.late_runs.after_seconds)).toBe(90)
      const report = settingsReport(settings)
      expect(at(report, "server.events.retention_period")).toBe("P2D")
      expect(at(report, "server.services.late_runs.after_seconds")).toBe("PT1M30S")
    })
  )

  it.effect("unset an optional setting with an empty value or null", () =>
    Effect.gen(function* () {
      const settings = yield* load({ BATON_SERVER_DATABASE_PORT: "", BATON_API_URL: "null" })
      expect(settings.server.database.port).toBeNull()
      expect(settings.api.url).toBeNull()
    })
  )

  it.effect("reject a bad value with one line naming the variable, value and expected type", () =>
    Effect.gen(function* () {
      const error = yield* failure({ BATON_SERVER_API_PORT: "abc" })
      expect(error.message).toBe('Invalid setting BATON_SERVER_API_PORT="abc": expected integer >= 0 <= 65535')
    })
  )

  it.effect("report every bad value, one line each", () =>
    Effect.gen(function* () {
      const error = yield* failure({
        BATON_SERVER_API_PORT: "70000",
        BATON_DEBUG_MODE: "maybe",
        BATON_SERVER_EVENTS_RETENTION_PERIOD: "soon",
        BATON_LOGGING_LEVEL: "LOUD"
      })
      const lines = error.message.split("\n")
      expect(lines).toHaveLength(4)
      expect(lines).toEqual(
        expect.arrayContaining([
          'Invalid setting BATON_SERVER_API_PORT="70000": expected integer >= 0 <= 65535',
          'Invalid setting BATON_DEBUG_MODE="maybe": expected boolean',
          'Invalid setting BATON_SERVER_EVENTS_RETENTION_PERIOD="soon": expected ISO 8601 duration (e.g. PT1H) or seconds',
          'Invalid setting BATON_LOGGING_LEVEL="LOUD": expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL'
        ])
      )
    })
  )
})

describe("secrets", () => {
  it.effect("are obfuscated when set, null when unset, and keep the real value in memory", () =>
    Effect.gen(function* () {
      const settings = yield* load({
        BATON_API_KEY: "sk-very-secret",
        BATON_SERVER_DATABASE_PASSWORD: "hunter2"
      })
      const report = settingsReport(settings)
      expect(at(report, "api.key")).toBe("********")
      expect(at(report, "server.database.password")).toBe("********")
      expect(at(report, "api.auth_string")).toBeNull()
      expect(at(report, "server.database.connection_url")).toBeNull()
      expect(JSON.stringify(report)).not.toContain("sk-very-secret")
      expect(JSON.stringify(report)).not.toContain("hunter2")
      expect(Redacted.value(settings.api.key!)).toBe("sk-very-secret")
      expect(Redacted.value(settings.server.database.password!)).toBe("hunter2")
      expect(String(settings.api.key)).not.toContain("sk-very-secret")
    })
  )
})

describe("overrides", () => {
  it.effect("win over the environment", () =>
    Effect.gen(function* () {
      const settings = yield* load(
        { BATON_SERVER_API_PORT: "8080", BATON_SERVER_API_HOST: "0.0.0.0" },
        { "server.api.port": 1234, "server.services.late_runs.after_seconds": "PT30S" }
      )
      expect(settings.server.api.port).toBe(1234)
      expect(settings.server.api.host).toBe("0.0.0.0")
      expect(Duration.toSeconds(settings.server.services.late_runs.after_seconds)).toBe(30)
    })
  )

  it.effect("reject an unknown key", () =>
    Effect.gen(function* () {
      const error = yield* failure({}, { "server.api.prot": 1234 })
      expect(error.message).toBe('Invalid setting server.api.prot="1234": expected a known setting key')
    })
  )

  it.effect("reject a bad value under its dotted key", () =>
    Effect.gen(function* () {
      const error = yield* failure({}, { "server.api.port": "abc" })
      expect(error.message).toBe('Invalid setting server.api.port="abc": expected integer >= 0 <= 65535')
    })
  )
})

describe("home and derived paths", () => {
  it.effect("default under ~/.baton, expanded", () =>
    Effect.gen(function* () {
      const settings = yield* load()
      const home = path.join(os.homedir(), ".baton")
      expect(settings.home).toBe(home)
      expect(settings.profiles_path).toBe(path.join(home, "profiles.toml"))
      expect(settings.server.memo_store_path).toBe(path.join(home, "memo_store.toml"))
      expect(settings.results.local_storage_path).toBe(path.join(home, "storage"))
      expect(settings.logging.config_path).toBe(path.join(home, "logging.yml"))
    })
  )

  it.effect("follow a home set in the environment", () =>
    Effect.gen(function* () {
      const settings = yield* load({ BATON_HOME: "~/elsewhere" })
      const home = path.join(os.homedir(), "elsewhere")
      expect(settings.home).toBe(home)
      expect(settings.profiles_path).toBe(path.join(home, "profiles.toml"))
      expect(settings.results.local_storage_path).toBe(path.join(home, "storage"))
      expect(settings.logging.config_path).toBe(path.join(home, "logging.yml"))
    })
  )

  it.effect("keep a path set explicitly, expanding ~", () =>
    Effect.gen(function* () {
      const settings = yield* load({ BATON_HOME: "/srv/baton", BATON_PROFILES_PATH: "~/profiles.toml", BATON_LOGGING_CONFIG_PATH: "/etc/baton/logging.yml" })
      expect(settings.home).toBe("/srv/baton")
      expect(settings.logging.config_path).toBe("/etc/baton/logging.yml")
      expect(settings.profiles_path).toBe(path.join(os.homedir(), "profiles.toml"))
      expect(settings.server.memo_store_path).toBe(path.join("/srv/baton", "memo_store.toml"))
    })
  )
})

describe("the lease storage", () => {
  it.effect("follows the database when unset: memory embedded, database on PostgreSQL; a set value wins", () =>
    Effect.gen(function* () {
      expect((yield* load()).server.concurrency.lease_storage).toBe("memory")
      const url = "postgresql://baton@db.internal:5432/baton"
      expect((yield* load({ BATON_SERVER_DATABASE_CONNECTION_URL: url })).server.concurrency.lease_storage).toBe("database")
      expect((yield* load({ BATON_SERVER_DATABASE_HOST: "db.internal" })).server.concurrency.lease_storage).toBe("database")
      const chosen = yield* load({ BATON_SERVER_DATABASE_CONNECTION_URL: url, BATON_SERVER_CONCURRENCY_LEASE_STORAGE: "memory" })
      expect(chosen.server.concurrency.lease_storage).toBe("memory")
      expect(settingsReport(chosen)).toMatchObject({ server: { concurrency: { lease_storage: "memory" } } })
    })
  )
})

describe("the event cache and causal ordering", () => {
  it.effect("follow the broker when unset; a set value wins", () =>
    Effect.gen(function* () {
      const events = (env: Record<string, string>) => Effect.map(load(env), (settings) => settings.server.events)
      expect(yield* events({})).toMatchObject({ messaging_broker: "memory", messaging_cache: "memory", causal_ordering: "memory" })
      expect(yield* events({ BATON_SERVER_EVENTS_MESSAGING_BROKER: "redis" })).toMatchObject({ messaging_cache: "redis", causal_ordering: "redis" })
      expect(yield* events({ BATON_SERVER_EVENTS_MESSAGING_BROKER: "redis", BATON_SERVER_EVENTS_CAUSAL_ORDERING: "memory" })).toMatchObject({
        messaging_cache: "redis",
        causal_ordering: "memory"
      })
    })
  )
})

describe("docs/configuration.md", () => {
  it("is in step with the settings tree (npm run docs:config regenerates it)", () => {
    expect(fs.readFileSync(DOCS_PATH, "utf8")).toBe(renderConfigDocs())
  })
})
