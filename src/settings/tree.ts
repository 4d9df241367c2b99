/**
 * The complete settings tree: every key of the specification's settings report, with its default.
 * Environment variable of a key: BATON_ + its path upper-cased and joined by "_".
 */
import * as S from "./define.ts"
import { server } from "./tree-server.ts"

export const tree = {
  home: S.string("~/.baton", "The Baton home directory; the embedded database lives under it."),
  profiles_path: S.optionalString("Path of the profiles file; defaults to {home}/profiles.toml."),
  debug_mode: S.boolean(false, "Enables extra logging and debugging features."),
  ui_url: S.optionalString("URL of the UI; clients infer it when unset."),
  silence_api_url_misconfiguration: S.boolean(false, "Silences the warning about a manually set API URL."),
  api: {
    url: S.optionalString("URL of the API that clients talk to."),
    auth_string: S.secret("Credential (user:password) clients send to an API that requires HTTP Basic authentication."),
    key: S.secret("API key clients send to the API."),
    tls_insecure_skip_verify: S.boolean(false, "Clients skip TLS certificate verification."),
    ssl_cert_file: S.optionalString("Certificate bundle clients use to verify the API."),
    enable_http2: S.boolean(false, "Clients talk to the API over HTTP/2 when the API supports it."),
    request_timeout: S.number(60, "Seconds a client waits for an API request before giving up.", { min: 0 })
  },
  cli: {
    colors: S.boolean(true, "The command line uses colors."),
    prompt: S.boolean(true, "The command line uses interactive prompts."),
    wrap_lines: S.boolean(true, "The command line wraps long lines.")
  },
  client: {
    max_retries: S.integer(5, "Times a client retries a request that failed with a retryable status.", { min: 0 }),
    retry_jitter_factor: S.number(0.2, "Amount of random jitter added to client retry delays (0 for none).", { min: 0 }),
    retry_extra_codes: S.string("404,429,503", "Comma-separated extra HTTP status codes clients retry."),
    csrf_support_enabled: S.boolean(true, "Clients fetch and send CSRF tokens when the server asks for them."),
    custom_headers: S.stringRecord({}, "Extra headers clients send with every request (JSON object)."),
    metrics: {
      enabled: S.boolean(false, "Clients serve Prometheus metrics."),
      port: S.integer(4201, "Port of the client metrics server.", { min: 0, max: 65535 })
    }
  },
  cloud: {
    api_url: S.string("https://api.prefect.cloud/api", "URL of the hosted cloud API."),
    enable_orchestration_telemetry: S.boolean(true, "Sends orchestration telemetry to the hosted cloud."),
    max_log_size: S.integer(25000, "Largest log message, in characters, the hosted cloud accepts.", { min: 0 }),
    ui_url: S.optionalString("URL of the hosted cloud UI.")
  },
  deployments: {
    default_work_pool_name: S.optionalString("Work pool used when a deployment names none."),
    default_docker_build_namespace: S.optionalString("Namespace for images built for deployments.")
  },
  experiments: {
    warn: S.boolean(true, "Warns when an experimental feature is used."),
    plugins: {
      enabled: S.boolean(false, "Enables the plugin system."),
      allow: S.optionalStringList("Plugins allowed to load; when set, only these load."),
      deny: S.optionalStringList("Plugins that are never loaded."),
      setup_timeout_seconds: S.number(20, "Seconds all plugins together may take to set up.", { min: 0 }),
      strict: S.boolean(false, "A failing plugin stops start-up."),
      safe_mode: S.boolean(false, "Loads plugins without running their hooks.")
    }
  },
  flows: {
    heartbeat_frequency: S.integer(31, "Seconds between flow run heartbeats, which reveal crashed runs.", { min: 0 }),
    default_retries: S.integer(0, "Retries of a flow that sets none itself.", { min: 0 }),
    default_retry_delay_seconds: S.number(0, "Seconds between flow retries when the flow sets none.", { min: 0 })
  },
  internal: {
    logging_level: S.logLevel("ERROR", "Log level of Baton's internal machinery loggers.")
  },
  logging: {
    level: S.logLevel("INFO", "Default log level of Baton's loggers."),
    config_path: S.optionalString("Path of the logging configuration file; defaults to {home}/logging.yml."),
    extra_loggers: S.optionalString("Comma-separated extra loggers to attach run handlers to."),
    log_prints: S.boolean(false, "Print calls inside flows and tasks are sent to the run's logger."),
    colors: S.boolean(true, "Console logs use colors."),
    markup: S.boolean(false, "Console logs interpret text in square brackets as styles."),
    to_api: {
      enabled: S.boolean(true, "Run logs are sent to the API."),
      batch_interval: S.number(2, "Seconds between two batches of logs sent to the API.", { min: 0 }),
      batch_size: S.integer(4000000, "Largest batch of logs sent to the API at once, in bytes.", { min: 1 }),
      max_log_size: S.integer(1000000, "Largest single log sent to the API, in bytes.", { min: 1 }),
      when_missing_flow: S.literal(["warn", "error", "ignore"], "warn", "What happens to a log sent to the API from outside a flow run: warn, error or ignore.")
    }
  },
  results: {
    default_serializer: S.string("pickle", "Serializer of results when a run names none."),
    persist_by_default: S.boolean(false, "Results are persisted unless a run says otherwise."),
    default_storage_block: S.optionalString("Slug (block-type/block-document) of the block results are stored in by default."),
    local_storage_path: S.optionalString("Local folder for results; defaults to {home}/storage.")
  },
  runner: {
    process_limit: S.integer(5, "Runs a runner executes at once.", { min: 0 }),
    poll_frequency: S.integer(10, "Seconds between runner polls.", { min: 0 }),
    crash_on_cancellation_failure: S.boolean(false, "A runner crashes when it cannot cancel a run."),
    server: {
      enable: S.boolean(false, "The runner serves its webserver."),
      host: S.string("localhost", "Address of the runner's webserver."),
      port: S.integer(8080, "Port of the runner's webserver.", { min: 0, max: 65535 }),
      log_level: S.logLevel("ERROR", "Log level of the runner's webserver."),
      missed_polls_tolerance: S.integer(2, "Polls a runner may miss before it counts as unhealthy.", { min: 0 })
    }
  },
  server,
  tasks: {
    refresh_cache: S.boolean(false, "Task caches are refreshed on every run."),
    default_no_cache: S.boolean(false, "Tasks are not cached unless they say so."),
    disable_caching: S.boolean(false, "Task caching is turned off."),
    default_retries: S.integer(0, "Retries of a task that sets none itself.", { min: 0 }),
    default_retry_delay_seconds: S.number(0, "Seconds between task retries when the task sets none.", { min: 0 }),
    default_persist_result: S.boolean(true, "Task results are persisted unless a task says otherwise."),
    runner: {
      thread_pool_max_workers: S.integer(1, "Threads of the thread-pool task runner.", { min: 1 }),
      process_pool_max_workers: S.integer(1, "Processes of the process-pool task runner.", { min: 1 })
    },
    scheduling: {
      default_storage_block: S.optionalString("Slug (block-type/block-document) of the block that stores parameters of background tasks."),
      delete_failed_submissions: S.boolean(true, "Parameters of a failed background task submission are deleted.")
    }
  },
  testing: {
    test_mode: S.boolean(false, "Places the API in test mode, which may change behaviour to ease testing."),
    unit_test_mode: S.boolean(false, "Marks code as running inside a unit test; exists only for tests."),
    unit_test_loop_debug: S.boolean(true, "Turns on debugging of the event loop in unit tests."),
    test_setting: S.string("FOO", "A setting that exists only for tests of the settings machinery.")
  },
  worker: {
    debug_mode: S.boolean(false, "Debug mode for workers only, not passed on to the runs they execute."),
    heartbeat_seconds: S.number(30, "Seconds between worker heartbeats.", { min: 0 }),
    query_seconds: S.number(10, "Seconds between worker polls for scheduled runs.", { min: 0 }),
    prefetch_seconds: S.number(10, "Seconds ahead of its scheduled time a worker submits a run.", { min: 0 }),
    enable_cancellation: S.boolean(false, "Workers stop the infrastructure of pending runs that are cancelled."),
    cancellation_poll_seconds: S.number(120, "Seconds between worker checks for cancelled runs.", { min: 0 }),
    webserver: {
      host: S.string("0.0.0.0", "Address of the worker's webserver."),
      port: S.integer(8080, "Port of the worker's webserver.", { min: 0, max: 65535 })
    }
  }
} satisfies S.Tree
