/**
 * The core ("system") block types and their block schemas, as the reference
 * server registers them at start-up: the protected ones (Secret, Webhook,
 * Local File System) and those of the client block registry (file systems,
 * notification blocks), plus the legacy JSON / String / Date Time blocks that
 * older clients still load.
 *
 * `fields` mirrors what the reference stores and serves for each schema: the
 * pydantic v2 JSON Schema of the block class after Prefect's
 * `Block.model_json_schema` post-processing (every `additionalProperties` key
 * removed, a `position` on each property in declaration order) plus the
 * `block_type_slug`, `secret_fields` and `block_schema_references` extras.
 * Definitions that are empty are dropped by the reference on save, so none
 * appear here.
 */

/** The core block types Baton registers at start (server.register_blocks_on_start). */
export interface SystemBlock {
  /** The block type. */
  readonly name: string
  readonly slug: string
  readonly logo_url: string | null
  readonly documentation_url: string | null
  readonly description: string | null
  readonly code_example: string | null
  /** Protected types (secret, webhook, local-file-system on the reference) cannot be changed or deleted through the API. */
  readonly is_protected: boolean
  /** The block schema's capabilities, sorted. */
  readonly capabilities: ReadonlyArray<string>
  /** The block schema's `fields`: the JSON Schema of the block's data, with block_type_slug, secret_fields and block_schema_references. */
  readonly fields: Readonly<Record<string, unknown>>
}

/** The block type's own fields of a system block. */
export const blockTypeOf = (block: SystemBlock) => ({
  name: block.name,
  slug: block.slug,
  logo_url: block.logo_url,
  documentation_url: block.documentation_url,
  description: block.description,
  code_example: block.code_example
})

// ---------------------------------------------------------------------------
// Helpers for the repeated property shapes (pydantic v2 output).

type Property = Readonly<Record<string, unknown>>
type Extra = Readonly<Record<string, unknown>>

const NULL: Property = { type: "null" }
const STRING: Property = { type: "string" }
const INTEGER: Property = { type: "integer" }
const OBJECT: Property = { type: "object" }
const STRING_ARRAY: Property = { type: "array", items: { type: "string" } }
const SECRET_STRING: Property = { type: "string", format: "password", writeOnly: true }

/** A `str` field. */
const string = (title: string, description: string, extra: Extra = {}): Property => ({
  title,
  description,
  type: "string",
  ...extra
})

/** A `SecretStr` field. */
const secretString = (title: string, description: string, extra: Extra = {}): Property => ({
  title,
  description,
  ...SECRET_STRING,
  ...extra
})

/** A `bool` field with a default. */
const boolean = (title: string, description: string, defaultValue: boolean): Property => ({
  title,
  description,
  type: "boolean",
  default: defaultValue
})

/** An `int` field with a default. */
const integer = (title: string, description: string, defaultValue: number): Property => ({
  title,
  description,
  type: "integer",
  default: defaultValue
})

/** A `Literal[...]` string field with a default. */
const literal = (
  title: string,
  description: string,
  values: ReadonlyArray<string>,
  defaultValue: string
): Property => ({ title, description, type: "string", enum: values, default: defaultValue })

/** An `Optional[X]` field: `anyOf: [X, null]` with a default (null unless given). */
const optional = (
  title: string,
  description: string,
  inner: Property,
  extra: Extra = {}
): Property => ({ title, description, anyOf: [inner, NULL], default: null, ...extra })

/** A `SecretDict` field (a pydantic `Secret[dict]`): a plain object in the schema. */
const secretDict = (title: string, description: string, extra: Extra = {}): Property => ({
  title,
  description,
  type: "object",
  ...extra
})

const withPositions = (properties: Readonly<Record<string, Property>>): Record<string, Property> =>
  Object.fromEntries(Object.entries(properties).map(([key, value], position) => [key, { ...value, position }]))

/** The block schema `fields` of a block class. */
const blockFields = (spec: {
  readonly title: string
  readonly description: string
  readonly slug: string
  readonly properties: Readonly<Record<string, Property>>
  readonly required?: ReadonlyArray<string>
  readonly secretFields?: ReadonlyArray<string>
}): Readonly<Record<string, unknown>> => ({
  title: spec.title,
  description: spec.description,
  type: "object",
  properties: withPositions(spec.properties),
  ...(spec.required !== undefined && spec.required.length > 0 ? { required: spec.required } : {}),
  block_type_slug: spec.slug,
  secret_fields: spec.secretFields ?? [],
  block_schema_references: {}
})

/** The default code example shape: import the class and load a stored block. */
const loadExample = (intro: string, module: string, className: string, variable: string, extra = "") =>
  `${intro}\n\`\`\`python\nfrom ${module} import ${className}\n\n${variable} = ${className}.load("BLOCK_NAME")${extra}\n\`\`\``

const notifyExample = (intro: string, className: string, variable: string) =>
  loadExample(intro, "prefect.blocks.notifications", className, variable, `\n${variable}.notify("Hello from Prefect!")`)

// ---------------------------------------------------------------------------
// Shared values.

const BLOCKS_DOCS = "https://docs.prefect.io/latest/develop/blocks"
const FILESYSTEM_DOCS = "https://docs.prefect.io/latest/develop/results#specifying-a-default-filesystem"
const NOTIFICATION_DOCS =
  "https://docs.prefect.io/latest/automate/events/automations-triggers#sending-notifications-with-automations"
const LOGO = (image: string) => `https://cdn.sanity.io/images/3ugk85nk/production/${image}`

const FILE_SYSTEM_CAPABILITIES = ["get-directory", "put-directory", "read-path", "write-path"] as const
const NOTIFY = ["notify"] as const

const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const
const NOTIFY_TYPES = ["info", "success", "warning", "failure"] as const
const REGIONS = ["us", "eu"] as const

const notifyType = (description = "The type of notification being performed."): Property =>
  literal("Notify Type", description, NOTIFY_TYPES, "info")

const allowPrivateUrls: Property = boolean(
  "Allow Private Urls",
  "Whether to allow notifications to private URLs. Defaults to True.",
  true
)

const webhookMethod: Property = literal(
  "Method",
  "The webhook request method. Defaults to `POST`.",
  HTTP_METHODS,
  "POST"
)

const CUSTOM_WEBHOOK_TEMPLATE_EXAMPLE = '{"text": "{{subject}}\\n{{body}}", "title": "{{name}}", "token": "{{tokenFromSecrets}}"}'

// ---------------------------------------------------------------------------
// The blocks, in registration order.

const block = (spec: {
  readonly name: string
  readonly slug: string
  readonly logo_url: string | null
  readonly documentation_url: string | null
  readonly description: string
  readonly code_example: string
  readonly is_protected?: boolean
  readonly capabilities?: ReadonlyArray<string>
  readonly title: string
  readonly properties: Readonly<Record<string, Property>>
  readonly required?: ReadonlyArray<string>
  readonly secretFields?: ReadonlyArray<string>
}): SystemBlock => ({
  name: spec.name,
  slug: spec.slug,
  logo_url: spec.logo_url,
  documentation_url: spec.documentation_url,
  description: spec.description,
  code_example: spec.code_example,
  is_protected: spec.is_protected ?? false,
  capabilities: [...(spec.capabilities ?? [])].sort(),
  fields: blockFields({
    title: spec.title,
    description: spec.description,
    slug: spec.slug,
    properties: spec.properties,
    ...(spec.required !== undefined ? { required: spec.required } : {}),
    ...(spec.secretFields !== undefined ? { secretFields: spec.secretFields } : {})
  })
})

export const systemBlocks: ReadonlyArray<SystemBlock> = [
  block({
    name: "Secret",
    slug: "secret",
    logo_url: LOGO("c6f20e556dd16effda9df16551feecfb5822092b-48x48.png"),
    documentation_url: BLOCKS_DOCS,
    description:
      "Holds a secret value. The stored value is kept hidden whenever the block is viewed or edited in the UI.",
    code_example:
      'Save a secret and read it back:\n```python\nfrom prefect.blocks.system import Secret\n\nSecret(value="sk-1234567890").save("BLOCK_NAME", overwrite=True)\n\nsecret_block = Secret.load("BLOCK_NAME")\n\n# Read the stored secret\nsecret_block.get()\n```',
    is_protected: true,
    title: "Secret",
    properties: {
      // Union[SecretStr, Secret[StrictStr | JsonValue]] with a password/writeOnly override.
      value: {
        title: "Value",
        description: "A value that should be kept secret.",
        anyOf: [SECRET_STRING, { title: "string", type: "string" }, { $ref: "#/definitions/JsonValue", title: "JSON" }],
        examples: ["sk-1234567890", { username: "johndoe", password: "s3cr3t" }],
        format: "password",
        writeOnly: true
      }
    },
    required: ["value"],
    secretFields: ["value"]
  }),
  block({
    name: "JSON",
    slug: "json",
    logo_url: LOGO("4fcef2294b6eeb423b1332d1ece5156bf296ff96-48x48.png"),
    documentation_url: BLOCKS_DOCS,
    description: "Holds a JSON value. Deprecated: store JSON data in Variables instead.",
    code_example: loadExample("Load a stored JSON value:", "prefect.blocks.system", "JSON", "json_block"),
    title: "JSON",
    // `Any`: no type constraint.
    properties: { value: { title: "Value", description: "A JSON-compatible value." } },
    required: ["value"]
  }),
  block({
    name: "String",
    slug: "string",
    logo_url: LOGO("c262ea2c80a2c043564e8763f3370c3db5a6b3e6-48x48.png"),
    documentation_url: BLOCKS_DOCS,
    description: "Holds a string value. Deprecated: store string data in Variables instead.",
    code_example: loadExample("Load a stored string value:", "prefect.blocks.system", "String", "string_block"),
    title: "String",
    properties: { value: string("Value", "A string value.") },
    required: ["value"]
  }),
  block({
    name: "Date Time",
    slug: "date-time",
    logo_url: LOGO("8b3da9a6621e92108b8e6a75b82e15374e170ff7-48x48.png"),
    documentation_url: BLOCKS_DOCS,
    description: "Holds a date-time value. Deprecated: store date-time data in Variables instead.",
    code_example: loadExample("Load a stored date-time value:", "prefect.blocks.system", "DateTime", "date_time_block"),
    title: "DateTime",
    properties: {
      value: string("Value", "An ISO 8601-compatible datetime value.", { format: "date-time" })
    },
    required: ["value"]
  }),
  block({
    name: "Webhook",
    slug: "webhook",
    logo_url: LOGO("c7247cb359eb6cf276734d4b1fbf00fb8930e89e-250x250.png"),
    documentation_url: "https://docs.prefect.io/latest/automate/events/webhook-triggers",
    description: "A block for calling webhooks.",
    code_example: loadExample("Load a stored webhook:", "prefect.blocks.webhook", "Webhook", "webhook_block"),
    is_protected: true,
    title: "Webhook",
    properties: {
      method: webhookMethod,
      url: secretString("Webhook URL", "The webhook URL.", { examples: ["https://hooks.slack.com/XXX"] }),
      headers: secretDict("Webhook Headers", "A dictionary of headers to send with the webhook request."),
      allow_private_urls: allowPrivateUrls,
      verify: boolean("Verify", "Whether or not to enforce a secure connection to the webhook.", true)
    },
    required: ["url"],
    secretFields: ["url", "headers.*"]
  }),
  block({
    name: "Local File System",
    slug: "local-file-system",
    logo_url: LOGO("ad39089fa66d273b943394a68f003f7a19aa850e-48x48.png"),
    documentation_url: FILESYSTEM_DOCS,
    description: "Stores data as files on the local file system.",
    code_example: loadExample(
      "Load a stored local file system configuration:",
      "prefect.filesystems",
      "LocalFileSystem",
      "local_file_system_block"
    ),
    is_protected: true,
    capabilities: FILE_SYSTEM_CAPABILITIES,
    title: "LocalFileSystem",
    properties: {
      basepath: optional("Basepath", "Default local path for this block to write to.", STRING)
    }
  }),
  block({
    name: "Remote File System",
    slug: "remote-file-system",
    logo_url: LOGO("e86b41bc0f9c99ba9489abeee83433b43d5c9365-48x48.png"),
    documentation_url: FILESYSTEM_DOCS,
    description:
      'Stores data as files on a remote file system.\n\nAny remote file system that `fsspec` supports can be used; the protocol of the path selects it, so "s3://my-bucket/my-folder/" means S3.',
    code_example: loadExample(
      "Load a stored remote file system configuration:",
      "prefect.filesystems",
      "RemoteFileSystem",
      "remote_file_system_block"
    ),
    capabilities: FILE_SYSTEM_CAPABILITIES,
    title: "RemoteFileSystem",
    properties: {
      basepath: string("Basepath", "Default path for this block to write to.", {
        examples: ["s3://my-bucket/my-folder/"]
      }),
      settings: { title: "Settings", description: "Additional settings to pass through to fsspec.", ...OBJECT }
    },
    required: ["basepath"]
  }),
  block({
    name: "SMB",
    slug: "smb",
    logo_url: LOGO("3f624663f7beb97d011d011bffd51ecf6c499efc-195x195.png"),
    documentation_url: FILESYSTEM_DOCS,
    description: "Stores data as files on an SMB share.",
    code_example: loadExample("Load a stored SMB configuration:", "prefect.filesystems", "SMB", "smb_block"),
    capabilities: FILE_SYSTEM_CAPABILITIES,
    title: "SMB",
    properties: {
      share_path: string("Share Path", "SMB target (requires <SHARE>, followed by <PATH>).", {
        examples: ["/SHARE/dir/subdir"]
      }),
      smb_username: optional("SMB Username", "Username with access to the target SMB SHARE.", SECRET_STRING),
      smb_password: optional("SMB Password", "Password for SMB access.", SECRET_STRING),
      smb_host: string("SMB server/hostname", "SMB server/hostname."),
      smb_port: optional("SMB port", "SMB port (default: 445).", INTEGER)
    },
    required: ["share_path", "smb_host"],
    secretFields: ["smb_username", "smb_password"]
  }),
  block({
    name: "RedisStorageContainer",
    slug: "redisstoragecontainer",
    logo_url: LOGO("dfb02cfce09ce3ca88fea097659a83554dd7a850-596x512.png"),
    documentation_url: null,
    description: "Uses Redis as a file system.",
    code_example:
      'Create a block from a host name, user name and password:\n```python\nfrom prefect.blocks.redis import RedisStorageContainer\n\nblock = RedisStorageContainer.from_host(\n    host="myredishost.com", username="redis", password="SuperSecret"\n)\nblock.save("BLOCK_NAME")\n```\n\nCreate a block from a connection string:\n```python\nfrom prefect.blocks.redis import RedisStorageContainer\n\nblock = RedisStorageContainer.from_connection_string(\n    "redis://redis:SuperSecret@myredishost.com:6379"\n)\nblock.save("BLOCK_NAME")\n```',
    capabilities: ["read-path", "write-path"],
    title: "RedisStorageContainer",
    properties: {
      host: optional("Host", "Redis hostname", STRING),
      port: integer("Port", "Redis port", 6379),
      db: integer("Db", "Redis DB index", 0),
      username: optional("Username", "Redis username", SECRET_STRING),
      password: optional("Password", "Redis password", SECRET_STRING),
      connection_string: optional("Connection String", "Redis connection string", SECRET_STRING)
    },
    secretFields: ["username", "password", "connection_string"]
  }),
  block({
    name: "Slack Webhook",
    slug: "slack-webhook",
    logo_url: LOGO("c1965ecbf8704ee1ea20d77786de9a41ce1087d1-500x500.png"),
    documentation_url: NOTIFICATION_DOCS,
    description:
      "Sends notifications through a Slack incoming webhook.\n\nBoth standard Slack webhooks (hooks.slack.com) and Slack GovCloud webhooks (hooks.slack-gov.com) are supported.",
    code_example: notifyExample("Load a stored Slack webhook and send a message:", "SlackWebhook", "slack_webhook_block"),
    capabilities: NOTIFY,
    title: "SlackWebhook",
    properties: {
      notify_type: notifyType(),
      url: secretString("Webhook URL", "Slack incoming webhook URL used to send notifications.", {
        examples: ["https://hooks.slack.com/XXX"]
      }),
      allow_private_urls: allowPrivateUrls
    },
    required: ["url"],
    secretFields: ["url"]
  }),
  block({
    name: "Microsoft Teams Webhook",
    slug: "ms-teams-webhook",
    logo_url: LOGO("817efe008a57f0a24f3587414714b563e5e23658-250x250.png"),
    documentation_url: NOTIFICATION_DOCS,
    description: "Sends notifications through a Microsoft Teams webhook.",
    code_example: notifyExample(
      "Load a stored Microsoft Teams webhook and send a message:",
      "MicrosoftTeamsWebhook",
      "teams_webhook_block"
    ),
    capabilities: NOTIFY,
    title: "MicrosoftTeamsWebhook",
    properties: {
      notify_type: notifyType(),
      url: secretString(
        "Webhook URL",
        "The Microsoft Power Automate (Workflows) URL used to send notifications to Teams.",
        {
          examples: [
            "https://prod-NO.LOCATION.logic.azure.com:443/workflows/WFID/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=SIGNATURE"
          ]
        }
      ),
      allow_private_urls: allowPrivateUrls,
      include_image: boolean("Include Image", "Include an image with the notification.", true),
      wrap: boolean("Wrap", "Wrap the notification text.", true)
    },
    required: ["url"],
    secretFields: ["url"]
  }),
  block({
    name: "Pager Duty Webhook",
    slug: "pager-duty-webhook",
    logo_url: LOGO("8dbf37d17089c1ce531708eac2e510801f7b3aee-250x250.png"),
    documentation_url: NOTIFICATION_DOCS,
    description: "Sends notifications through a PagerDuty webhook.",
    code_example: notifyExample(
      "Load a stored PagerDuty webhook and send a message:",
      "PagerDutyWebHook",
      "pagerduty_webhook_block"
    ),
    capabilities: NOTIFY,
    title: "PagerDutyWebHook",
    properties: {
      notify_type: notifyType("The severity of the notification."),
      integration_key: secretString(
        "Integration Key",
        "This can be found on the Events API V2 integration's detail page, and is also referred to as a Routing Key. This must be provided alongside `api_key`, but will error if provided alongside `url`."
      ),
      api_key: secretString(
        "API Key",
        "This can be found under Integrations. This must be provided alongside `integration_key`, but will error if provided alongside `url`."
      ),
      source: optional("Source", "The source string as part of the payload.", STRING, { default: "Prefect" }),
      component: string("Component", "The component string as part of the payload.", { default: "Notification" }),
      group: optional("Group", "The group string as part of the payload.", STRING),
      class_id: optional("Class ID", "The class string as part of the payload.", STRING),
      region_name: literal("Region Name", "The region name.", REGIONS, "us"),
      clickable_url: optional("Clickable URL", "A clickable URL to associate with the notice.", {
        type: "string",
        format: "uri",
        minLength: 1
      }),
      include_image: boolean("Include Image", "Associate the notification status via a represented icon.", true),
      custom_details: optional("Custom Details", "Additional details to include as part of the payload.", OBJECT, {
        examples: ['{"disk_space_left": "145GB"}']
      })
    },
    required: ["integration_key", "api_key"],
    secretFields: ["integration_key", "api_key"]
  }),
  block({
    name: "Twilio SMS",
    slug: "twilio-sms",
    logo_url: LOGO("8bd8777999f82112c09b9c8d57083ac75a4a0d65-250x250.png"),
    documentation_url: NOTIFICATION_DOCS,
    description: "Sends notifications as Twilio SMS messages.",
    code_example: notifyExample("Load a stored Twilio SMS block and send a message:", "TwilioSMS", "twilio_webhook_block"),
    capabilities: NOTIFY,
    title: "TwilioSMS",
    properties: {
      notify_type: notifyType(),
      account_sid: string(
        "Account Sid",
        "The Twilio Account SID - it can be found on the homepage of the Twilio console."
      ),
      auth_token: secretString(
        "Auth Token",
        "The Twilio Authentication Token - it can be found on the homepage of the Twilio console."
      ),
      from_phone_number: string("From Phone Number", "The valid Twilio phone number to send the message from.", {
        examples: ["18001234567"]
      }),
      to_phone_numbers: {
        title: "To Phone Numbers",
        description: "A list of valid Twilio phone number(s) to send the message to.",
        ...STRING_ARRAY,
        examples: ['["18004242424", "18004242425"]']
      }
    },
    required: ["account_sid", "auth_token", "from_phone_number", "to_phone_numbers"],
    secretFields: ["auth_token"]
  }),
  block({
    name: "Opsgenie Webhook",
    slug: "opsgenie-webhook",
    logo_url: LOGO("d8b5bc6244ae6cd83b62ec42f10d96e14d6e9113-280x280.png"),
    documentation_url: NOTIFICATION_DOCS,
    description: "Sends notifications through an Opsgenie webhook.",
    code_example: notifyExample(
      "Load a stored Opsgenie webhook and send a message:",
      "OpsgenieWebhook",
      "opsgenie_webhook_block"
    ),
    capabilities: NOTIFY,
    title: "OpsgenieWebhook",
    properties: {
      notify_type: notifyType(),
      apikey: secretString("API Key", "The API Key associated with your Opsgenie account."),
      target_user: optional("Target User", "The user(s) you wish to notify.", STRING_ARRAY),
      target_team: optional("Target Team", "The team(s) you wish to notify.", STRING_ARRAY),
      target_schedule: optional("Target Schedule", "The schedule(s) you wish to notify.", STRING_ARRAY),
      target_escalation: optional("Target Escalation", "The escalation(s) you wish to notify.", STRING_ARRAY),
      region_name: literal("Region Name", "The 2-character region code.", REGIONS, "us"),
      batch: boolean("Batch", "Notify all targets in batches (instead of individually).", false),
      tags: optional(
        "Tags",
        "A comma-separated list of tags you can associate with your Opsgenie message.",
        STRING_ARRAY,
        { examples: ['["tag1", "tag2"]'] }
      ),
      priority: optional(
        "Priority",
        "The priority to associate with the message. It is on a scale between 1 (LOW) and 5 (EMERGENCY).",
        INTEGER,
        { default: 3 }
      ),
      alias: optional("Alias", "The alias to associate with the message.", STRING),
      entity: optional("Entity", "The entity to associate with the message.", STRING),
      details: optional("Details", "Additional details composed of key/values pairs.", OBJECT, {
        examples: ['{"key1": "value1", "key2": "value2"}']
      })
    },
    required: ["apikey"],
    secretFields: ["apikey"]
  }),
  block({
    name: "Mattermost Webhook",
    slug: "mattermost-webhook",
    logo_url: LOGO("1350a147130bf82cbc799a5f868d2c0116207736-250x250.png"),
    documentation_url: NOTIFICATION_DOCS,
    description: "Sends notifications through a Mattermost webhook.",
    code_example: notifyExample(
      "Load a stored Mattermost webhook and send a message:",
      "MattermostWebhook",
      "mattermost_webhook_block"
    ),
    capabilities: NOTIFY,
    title: "MattermostWebhook",
    properties: {
      notify_type: notifyType(),
      hostname: string("Hostname", "The hostname of your Mattermost server.", {
        examples: ["Mattermost.example.com"]
      }),
      secure: boolean("Secure", "Whether to use secure https connection.", false),
      token: secretString("Token", "The token associated with your Mattermost webhook."),
      botname: optional("Bot name", "The name of the bot that will send the message.", STRING),
      channels: optional("Channels", "The channel(s) you wish to notify.", STRING_ARRAY),
      include_image: boolean("Include Image", "Whether to include the Apprise status image in the message.", false),
      path: optional("Path", "An optional sub-path specification to append to the hostname.", STRING),
      port: integer("Port", "The port of your Mattermost server.", 8065)
    },
    required: ["hostname", "token"],
    secretFields: ["token"]
  }),
  block({
    name: "Discord Webhook",
    slug: "discord-webhook",
    logo_url: LOGO("9e94976c80ef925b66d24e5d14f0d47baa6b8f88-250x250.png"),
    documentation_url: NOTIFICATION_DOCS,
    description: "Sends notifications through a Discord webhook.",
    code_example: notifyExample(
      "Load a stored Discord webhook and send a message:",
      "DiscordWebhook",
      "discord_webhook_block"
    ),
    capabilities: NOTIFY,
    title: "DiscordWebhook",
    properties: {
      notify_type: notifyType(),
      webhook_id: secretString(
        "Webhook Id",
        "The first part of 2 tokens provided to you after creating a incoming-webhook."
      ),
      webhook_token: secretString(
        "Webhook Token",
        "The second part of 2 tokens provided to you after creating a incoming-webhook."
      ),
      botname: optional(
        "Bot name",
        "Identify the name of the bot that should issue the message. If one isn't specified then the default is to just use your account (associated with the incoming-webhook).",
        STRING
      ),
      tts: boolean("Tts", "Whether to enable Text-To-Speech.", false),
      include_image: boolean(
        "Include Image",
        "Whether to include an image in-line with the message describing the notification type.",
        false
      ),
      avatar: boolean("Avatar", "Whether to override the default discord avatar icon.", false),
      avatar_url: optional(
        "Avatar URL",
        "Over-ride the default discord avatar icon URL. By default this is not set and Apprise chooses the URL dynamically based on the type of message (info, success, warning, or error).",
        STRING
      )
    },
    required: ["webhook_id", "webhook_token"],
    secretFields: ["webhook_id", "webhook_token"]
  }),
  block({
    name: "Custom Webhook",
    slug: "custom-webhook",
    logo_url: LOGO("c7247cb359eb6cf276734d4b1fbf00fb8930e89e-250x250.png"),
    documentation_url: NOTIFICATION_DOCS,
    description:
      "Sends notifications through any custom webhook.\n\nEvery nested string parameter containing `{{key}}` is filled in with the matching value from the context or the secrets.\n\nThe context provides `subject`, `body` and `name`.",
    code_example: notifyExample(
      "Load a stored custom webhook and send a message:",
      "CustomWebhookNotificationBlock",
      "custom_webhook_block"
    ),
    capabilities: NOTIFY,
    title: "CustomWebhookNotificationBlock",
    properties: {
      name: string("Name", "Name of the webhook."),
      url: string("Webhook URL", "The webhook URL.", { examples: ["https://hooks.slack.com/XXX"] }),
      method: webhookMethod,
      params: optional("Query Params", "Custom query params.", OBJECT),
      json_data: optional("JSON Data", "Send json data as payload.", OBJECT, {
        examples: [CUSTOM_WEBHOOK_TEMPLATE_EXAMPLE]
      }),
      form_data: {
        title: "Form Data",
        description:
          "Send form data as payload. Should not be used together with _JSON Data_. Can be a dictionary for form-encoded data or a string for raw body content.",
        anyOf: [OBJECT, STRING, NULL],
        default: null,
        examples: [CUSTOM_WEBHOOK_TEMPLATE_EXAMPLE]
      },
      headers: optional("Headers", "Custom headers.", OBJECT),
      cookies: optional("Cookies", "Custom cookies.", OBJECT),
      timeout: { title: "Timeout", description: "Request timeout in seconds. Defaults to 10.", type: "number", default: 10 },
      allow_private_urls: allowPrivateUrls,
      secrets: secretDict(
        "Custom Secret Values",
        "A dictionary of secret values to be substituted in other configs.",
        { examples: ['{"tokenFromSecrets":"SomeSecretToken"}'] }
      )
    },
    required: ["name", "url"],
    secretFields: ["secrets.*"]
  }),
  block({
    name: "Sendgrid Email",
    slug: "sendgrid-email",
    logo_url: LOGO("82bc6ed16ca42a2252a5512c72233a253b8a58eb-250x250.png"),
    documentation_url: NOTIFICATION_DOCS,
    description: "Sends notifications as emails through SendGrid.",
    code_example: notifyExample("Load a stored SendGrid block and send an email:", "SendgridEmail", "sendgrid_block"),
    capabilities: NOTIFY,
    title: "SendgridEmail",
    properties: {
      notify_type: notifyType(),
      api_key: secretString("API Key", "The API Key associated with your sendgrid account."),
      sender_email: string("Sender email id", "The sender email id.", { examples: ["test-support@gmail.com"] }),
      to_emails: {
        title: "Recipient emails",
        description: "Email ids of all recipients.",
        ...STRING_ARRAY,
        examples: ['["recipient1@gmail.com", "recipient2@gmail.com"]']
      }
    },
    required: ["api_key", "sender_email", "to_emails"],
    secretFields: ["api_key"]
  })
]
