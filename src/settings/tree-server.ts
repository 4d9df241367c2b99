/** The `server` section of the settings tree: the API, database, events and background services. */
import * as S from "./define.ts"

const enabled = (on: boolean, service: string) => S.boolean(on, `Whether the ${service} service runs.`)
const loopSeconds = (seconds: number, service: string) =>
  S.number(seconds, `Seconds between two iterations of the ${service} service.`, { min: 0 })

export const server = {
  logging_level: S.logLevel("WARNING", "Log level of the server."),
  analytics_enabled: S.boolean(true, "Sends anonymous usage data (such as counts of runs) at start-up."),
  metrics_enabled: S.boolean(false, "The API serves Prometheus metrics at {base}/metrics (docs/metrics.md)."),
  log_retryable_errors: S.boolean(
    false,
    "Logs every database failure a client may retry (answered 503: a lost connection, a deadlock, a serialization failure, a statement timeout) as an error with its trace, in the API and the background services; off, they are summed up in warnings without traces."
  ),
  register_blocks_on_start: S.boolean(true, "Registers the system block types and schemas at start."),
  memoize_block_auto_registration: S.boolean(
    true,
    "Skips block registration when nothing changed since the last registration into the database (remembered in the database itself)."
  ),
  memo_store_path: S.optionalString("Accepted for compatibility; Baton remembers block registration in the database, not in a file."),
  deployment_schedule_max_scheduled_runs: S.integer(50, "Most scheduled runs kept ahead per deployment schedule.", { min: 1 }),
  api: {
    auth_string: S.secret("HTTP Basic credential (user:password) every API request must carry."),
    host: S.string("127.0.0.1", "Address the API server listens on."),
    port: S.integer(4200, "Port the API server listens on (0 picks a free one).", { min: 0, max: 65535 }),
    base_path: S.string("/v2/api", "Path prefix the API is served under."),
    default_limit: S.integer(200, "Default and largest page size of filter operations.", { min: 1 }),
    keepalive_timeout: S.integer(5, "Seconds an idle keep-alive connection is kept open.", { min: 0 }),
    csrf_protection_enabled: S.boolean(false, "State-changing requests need a CSRF token."),
    csrf_token_expiration: S.duration("PT1H", "How long a CSRF token stays valid."),
    cors_allowed_origins: S.string("*", "Comma-separated origins CORS allows (* for any)."),
    cors_allowed_methods: S.string("*", "Comma-separated methods CORS allows (* for any)."),
    cors_allowed_headers: S.string("*", "Comma-separated headers CORS allows (* for any)."),
    max_parameter_size: S.integer(524288, "Largest `parameters` object of a run or deployment, in bytes.", { min: 0 }),
    max_request_body_size: S.integer(
      10485760,
      "Largest request body, in bytes; a larger one is refused with 413 before it is read (0: no limit).",
      { min: 0 }
    ),
    headers_timeout: S.number(
      30,
      "Seconds a client may take to send a request's headers; then the connection is closed with 408 (0: no limit).",
      { min: 0 }
    ),
    request_read_timeout: S.number(
      60,
      "Seconds a client may take to send a whole request, headers and body; then the connection is closed with 408 (0: no limit).",
      { min: 0 }
    ),
    max_concurrent_requests: S.integer(
      1024,
      "Requests handled at once; beyond that the server answers 503 with Retry-After (0: no limit). Open websockets are counted apart (websockets.max_open).",
      { min: 0 }
    ),
    // A Baton extension, like the limits above: the spec's server.api keys come first, unchanged.
    workers: S.integer(
      1,
      "API processes serving the port (node:cluster): each a full Baton process, the background services led by one of them. More than 1 needs PostgreSQL. Also `baton server start --workers N`.",
      // Each worker is a whole server with up to 17 PostgreSQL connections: a typo must not fork thousands.
      { min: 1, max: 256 }
    ),
    websockets: {
      max_open: S.integer(
        1024,
        "Websockets open at once (/events/in, /events/out, /logs/out); beyond that a handshake is answered 503 with Retry-After (0: no limit).",
        { min: 0 }
      ),
      max_unauthenticated: S.integer(
        64,
        "Websockets open at once that have not authenticated yet (in their handshake or before their first message is accepted); beyond that a handshake is answered 503 with Retry-After (0: no limit).",
        { min: 0 }
      ),
      auth_timeout: S.number(
        5,
        "Seconds a websocket has, from its handshake, to authenticate with its first message; then it is closed with 1008 (0: no limit).",
        { min: 0 }
      ),
      max_buffered_bytes: S.integer(
        4194304,
        "Bytes the server holds for a websocket client that reads slower than it is sent to; past that, sending waits for the client (0: no limit).",
        { min: 0 }
      ),
      send_timeout: S.number(
        10,
        "Seconds a websocket client may leave more than max_buffered_bytes unread; then it is closed with 1008.",
        { min: 0 }
      ),
      ping_interval: S.number(
        20,
        "Seconds between the pings the server sends on an open websocket; a client that sends nothing, not even the pong, until the next ping is disconnected (0: no pings).",
        { min: 0 }
      )
    }
  },
  concurrency: {
    lease_storage: S.optionalString(
      "Where concurrency leases are kept: memory (in the server process) or database (a table every replica shares). Unset: memory on the embedded database, database on PostgreSQL."
    ),
    initial_deployment_lease_duration: S.number(300, "Seconds a deployment concurrency lease lasts before renewal.", { min: 0 }),
    maximum_concurrency_slot_wait_seconds: S.number(30, "Longest wait, in seconds, a client is told to retry after.", { min: 0 })
  },
  database: {
    sqlalchemy: {
      connect_args: {
        application_name: S.optionalString("The application_name of pooled PostgreSQL connections."),
        search_path: S.optionalString("The PostgreSQL search_path set on pooled connections (include the public schema)."),
        statement_cache_size: S.optionalInteger(
          "Prepared statements kept per PostgreSQL connection when prepared_statement_cache_size is unset (100 when both are; 0 turns them off, as PgBouncer in transaction mode needs)."
        ),
        prepared_statement_cache_size: S.optionalInteger(
          "Prepared statements kept per PostgreSQL connection (100 when unset; 0 turns them off). The embedded database keeps none."
        ),
        tls: {
          enabled: S.boolean(
            false,
            "Connects to PostgreSQL over TLS and verifies its certificate (as sslmode=verify-full, or verify-ca without check_hostname); an sslmode in connection_url wins. Not used by the embedded database."
          ),
          ca_file: S.optionalString("CA certificate file (PEM) the server's certificate is verified with; unset: the system's CAs. The URL's sslrootcert wins."),
          cert_file: S.optionalString("Client certificate file (PEM) presented to the server, with key_file. The URL's sslcert wins."),
          key_file: S.optionalString("Client key file (PEM) of cert_file. The URL's sslkey wins."),
          check_hostname: S.boolean(true, "With enabled: also verifies that the certificate names the host connected to (verify-full); false needs ca_file (verify-ca).")
        }
      },
      pool_size: S.integer(5, "Connections kept in the pool.", { min: 1 }),
      pool_recycle: S.integer(3600, "Seconds after which a pooled connection is replaced.", { min: 0 }),
      pool_timeout: S.number(30, "Seconds to wait for a free connection.", { min: 0 }),
      max_overflow: S.integer(10, "Connections allowed beyond pool_size under load.", { min: 0 })
    },
    connection_url: S.secret("PostgreSQL connection URL; when it and host are unset, the embedded database is used."),
    driver: S.string("postgresql+asyncpg", "Database driver name, kept for compatibility; Baton always speaks PostgreSQL."),
    host: S.optionalString("PostgreSQL host, used when connection_url is unset."),
    port: S.optionalInteger("PostgreSQL port."),
    user: S.optionalString("PostgreSQL user."),
    name: S.optionalString("PostgreSQL database name."),
    password: S.secret("PostgreSQL password."),
    echo: S.boolean(false, "Logs the text of every SQL statement, at INFO whatever the log level (never its parameters, which hold request values)."),
    migrate_on_start: S.boolean(true, "Applies pending migrations at start."),
    timeout: S.number(10, "Statement timeout in seconds; on PostgreSQL, a connection with no answer for this plus connection_timeout is dropped.", { min: 0 }),
    connection_timeout: S.number(5, "Seconds a new PostgreSQL connection may take to answer, and GET /ready waits for the database.", { min: 0 })
  },
  deployments: {
    concurrency_slot_wait_seconds: S.number(30, "Seconds a run waits before asking again for a deployment concurrency slot.", { min: 0 })
  },
  docket: {
    name: S.string("baton-server", "Name of the background task docket."),
    url: S.string("memory://", "URL of the background task docket.")
  },
  ephemeral: {
    enabled: S.boolean(false, "Runs an ephemeral server inside the client process."),
    startup_timeout_seconds: S.integer(20, "Seconds an ephemeral server may take to start.", { min: 0 })
  },
  events: {
    stream_out_enabled: S.boolean(true, "Events can be streamed out over the websocket."),
    related_resource_cache_ttl: S.duration("PT5M", "How long related resources are cached."),
    maximum_labels_per_resource: S.integer(500, "Most labels an event resource may have.", { min: 0 }),
    maximum_related_resources: S.integer(100, "Most related resources an event may have.", { min: 0 }),
    maximum_size_bytes: S.integer(1500000, "Largest event, in bytes.", { min: 0 }),
    expired_bucket_buffer: S.duration("PT1M", "How long an expired trigger bucket is kept."),
    proactive_granularity: S.duration("PT5S", "How often proactive triggers are evaluated."),
    retention_period: S.duration("P7D", "How long events are kept."),
    maximum_websocket_backfill: S.duration("PT15M", "How far back the event websocket backfills."),
    websocket_backfill_page_size: S.integer(250, "Events per page of a websocket backfill.", { min: 1 }),
    messaging_broker: S.string(
      "memory",
      "Implementation of the event messaging broker: memory keeps messages in the server process; redis shares them between replicas through a Redis stream."
    ),
    messaging_cache: S.optionalString(
      "Implementation of the message deduplication cache: memory keeps it in the server process; redis shares it between replicas. Unset: as messaging_broker."
    ),
    redis_url: S.string("redis://127.0.0.1:6379/0", "The Redis server of the redis broker and cache."),
    redis_stream: S.string("baton:events", "The Redis stream the redis broker publishes events to (its keys share this prefix)."),
    causal_ordering: S.optionalString(
      "Implementation of the causal ordering of events: memory keeps it in the server process; redis shares it between replicas. Unset: as messaging_broker."
    ),
    maximum_event_name_length: S.integer(1024, "Longest event name, in characters.", { min: 1 }),
    action_connect_timeout_seconds: S.number(
      5,
      "Seconds the request of a call-webhook or send-notification automation action may take to connect (name lookup, TCP and TLS).",
      { min: 0.1 }
    ),
    action_timeout_seconds: S.number(
      10,
      "Seconds the request of a call-webhook or send-notification automation action may take in all, from connecting to the end of the part of the answer it reads.",
      { min: 0.1 }
    ),
    action_max_timeout_seconds: S.number(
      30,
      "Longest total time a notification block's own timeout (a custom webhook's timeout field) may give its request.",
      { min: 0.1 }
    )
  },
  flow_run_graph: {
    max_nodes: S.integer(10000, "Most nodes of a flow run graph.", { min: 1 }),
    max_artifacts: S.integer(10000, "Most artifacts of a flow run graph.", { min: 0 })
  },
  logs: {
    stream_out_enabled: S.boolean(false, "Logs can be streamed out over the websocket."),
    stream_publishing_enabled: S.boolean(false, "Logs are published to the streaming system.")
  },
  services: {
    cancellation_cleanup: {
      enabled: enabled(true, "cancellation cleanup"),
      loop_seconds: loopSeconds(20, "cancellation cleanup")
    },
    db_vacuum: {
      enabled: enabled(false, "database vacuum"),
      loop_seconds: loopSeconds(3600, "database vacuum"),
      retention_period: S.duration("P90D", "How long terminal runs are kept before the vacuum deletes them."),
      batch_size: S.integer(200, "Rows the vacuum deletes per batch.", { min: 1 })
    },
    event_persister: {
      enabled: enabled(true, "event persister"),
      batch_size: S.integer(20, "Least number of events one write may take: a write takes all that is queued, up to 2000 events or this many when larger.", { min: 1 }),
      read_batch_size: S.integer(1, "Messages read from the broker at once.", { min: 1 }),
      flush_interval: S.number(5, "Seconds between flushes of buffered events.", { min: 0 }),
      batch_size_delete: S.integer(10000, "Expired events deleted per batch.", { min: 1 }),
      queue_max_size: S.integer(50000, "Most events waiting to be written: past that senders wait, and the oldest are dropped only when the persister takes none for 5 s.", { min: 1 }),
      max_flush_retries: S.integer(5, "Times a failed flush is retried.", { min: 0 })
    },
    event_logger: {
      enabled: enabled(false, "event logger")
    },
    foreman: {
      enabled: enabled(true, "foreman"),
      loop_seconds: loopSeconds(15, "foreman"),
      inactivity_heartbeat_multiple: S.integer(3, "Missed heartbeat intervals after which a worker is OFFLINE.", { min: 1 }),
      fallback_heartbeat_interval_seconds: S.integer(30, "Heartbeat interval of a worker that reports none.", { min: 1 }),
      deployment_last_polled_timeout_seconds: S.integer(60, "Seconds without a poll after which a deployment is NOT_READY.", { min: 1 }),
      work_queue_last_polled_timeout_seconds: S.integer(60, "Seconds without a poll after which a work queue is NOT_READY.", { min: 1 })
    },
    late_runs: {
      enabled: enabled(true, "late runs"),
      loop_seconds: loopSeconds(5, "late runs"),
      after_seconds: S.duration("PT15S", "How long past its scheduled time a run becomes Late.")
    },
    scheduler: {
      enabled: enabled(true, "scheduler"),
      loop_seconds: loopSeconds(60, "scheduler"),
      deployment_batch_size: S.integer(100, "Deployments scheduled per batch.", { min: 1 }),
      max_runs: S.integer(100, "Most runs scheduled ahead per deployment.", { min: 1 }),
      min_runs: S.integer(3, "Fewest runs scheduled ahead per deployment.", { min: 0 }),
      max_scheduled_time: S.duration("P100D", "How far ahead runs are scheduled at most."),
      min_scheduled_time: S.duration("PT1H", "How far ahead runs are scheduled at least."),
      insert_batch_size: S.integer(500, "Runs inserted per statement.", { min: 1 }),
      recent_deployments_loop_seconds: S.number(5, "Seconds between checks for new or changed deployments.", { min: 0 })
    },
    pause_expirations: {
      enabled: enabled(true, "pause expirations"),
      loop_seconds: loopSeconds(5, "pause expirations")
    },
    repossessor: {
      enabled: enabled(true, "repossessor"),
      loop_seconds: loopSeconds(15, "repossessor")
    },
    task_run_recorder: {
      enabled: enabled(true, "task run recorder"),
      read_batch_size: S.integer(1, "Messages read from the broker at once.", { min: 1 }),
      batch_size: S.integer(1, "Task run events recorded per batch.", { min: 1 }),
      flush_interval: S.number(5, "Seconds between flushes of buffered task run events.", { min: 0 })
    },
    triggers: {
      enabled: enabled(true, "triggers"),
      read_batch_size: S.integer(1, "Messages read from the broker at once.", { min: 1 }),
      pg_notify_reconnect_interval_seconds: S.integer(10, "Seconds before reconnecting a lost LISTEN connection.", { min: 1 }),
      pg_notify_heartbeat_interval_seconds: S.integer(5, "Seconds between LISTEN connection heartbeats.", { min: 1 })
    }
  },
  tasks: {
    tag_concurrency_slot_wait_seconds: S.number(30, "Seconds a task waits before asking again for a tag concurrency slot.", { min: 0 }),
    max_cache_key_length: S.integer(2000, "Longest task cache key, in characters.", { min: 1 }),
    scheduling: {
      max_scheduled_queue_size: S.integer(1000, "Most scheduled background tasks queued per key.", { min: 1 }),
      max_retry_queue_size: S.integer(100, "Most background task retries queued per key.", { min: 1 }),
      pending_task_timeout: S.duration("PT0S", "How long a background task may stay Pending before it is rescheduled (0: never).")
    }
  },
  ui: {
    enabled: S.boolean(true, "Serves a web UI: the one in static_directory, else those the installed Python SDK package ships."),
    v2_enabled: S.boolean(false, "The UI in static_directory is the second version of the web UI; with both UIs of the Python SDK package, the serve base opens the second one."),
    api_url: S.optionalString("API URL the UI talks to (in /ui-settings); defaults to api.url, else the base path."),
    serve_base: S.string("/", "Path the UI is served under; replaces the serve-base placeholder in its files."),
    static_directory: S.optionalString("Folder of a built UI to serve; copied at start, never changed."),
    prefect_package_directory: S.optionalString("Folder of the installed Python SDK package whose built UIs (server/ui, server/ui-v2) are served when static_directory is unset."),
    discover_prefect_package: S.boolean(true, "Looks for the installed Python SDK package (asking python3, then in the usual site-packages folders) when neither folder is set."),
    show_promotional_content: S.boolean(true, "The UI shows promotional content.")
  }
} satisfies S.Tree
