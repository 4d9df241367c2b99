/**
 * Block document data at rest: AES-256-GCM with a key the server generates on first use and keeps
 * in its configuration table, so a raw read of the database shows no secret.
 */
import { Effect, Option, Ref } from "effect"
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { ConfigurationRepo } from "../configuration/repo.ts"

const KEY_NAME = "ENCRYPTION_KEY"
const VERSION = "v1"
const IV_BYTES = 12
const TAG_BYTES = 16

/** A stored key: `{"aes_256_gcm_key": "<base64 of 32 bytes>"}`. */
const parseKey = (value: unknown): Option.Option<Buffer> => {
  const encoded = typeof value === "object" && value !== null ? (value as Record<string, unknown>).aes_256_gcm_key : undefined
  if (typeof encoded !== "string") return Option.none()
  const key = Buffer.from(encoded, "base64")
  return key.length === 32 ? Option.some(key) : Option.none()
}

export class EncryptionKeyInvalid extends Error {
  override readonly name = "EncryptionKeyInvalid"
}

/** `v1.<base64url of iv, ciphertext and tag>` of the JSON of `value`. */
export const seal = (key: Buffer, value: unknown): string => {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv("aes-256-gcm", key, iv)
  const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()])
  return `${VERSION}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url")}`
}

/** The value `seal` sealed; throws when the token was not sealed with `key` or was altered. */
export const open = (key: Buffer, token: string): unknown => {
  const [version, payload] = token.split(".", 2)
  if (version !== VERSION || payload === undefined) throw new EncryptionKeyInvalid("unknown block data format")
  const bytes = Buffer.from(payload, "base64url")
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES))
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
  const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()])
  return JSON.parse(text.toString("utf8"))
}

export class Encryption extends Effect.Service<Encryption>()("baton/Encryption", {
  effect: Effect.gen(function* () {
    const configuration = yield* ConfigurationRepo
    const cached = yield* Ref.make(Option.none<Buffer>())

    const load = Effect.gen(function* () {
      const fresh = { aes_256_gcm_key: randomBytes(32).toString("base64") }
      const stored = yield* configuration.readOrCreate(KEY_NAME, fresh)
      return yield* Option.match(parseKey(stored), {
        onNone: () => Effect.die(new EncryptionKeyInvalid(`configuration ${KEY_NAME} is not a valid key`)),
        onSome: Effect.succeed
      })
    })

    /**
     * The key, read (or made) once and then kept; a failed read is tried again next time. No lock
     * is held while it is read: a caller inside a transaction holds a connection (the embedded
     * database's only one), and waiting there for another caller's read would wait forever. Callers
     * racing each read it, and get the one key stored first (readOrCreate).
     */
    const key = Effect.flatMap(Ref.get(cached), (current) =>
      Option.match(current, {
        onSome: Effect.succeed,
        onNone: () => Effect.tap(load, (k) => Ref.set(cached, Option.some(k)))
      })
    )

    const encrypt = (value: unknown) => Effect.map(key, (k) => seal(k, value))
    // Data that does not open with the key is a broken database, not a request's fault: a defect.
    const decrypt = (token: string) => Effect.flatMap(key, (k) => Effect.sync(() => open(k, token)))

    return { encrypt, decrypt } as const
  }),
  dependencies: [ConfigurationRepo.Default]
}) {}
