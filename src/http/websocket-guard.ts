/**
 * What one websocket may cost the server, enforced on its TCP socket beneath the websocket library
 * (which the platform sets up with a 100 MiB frame limit and no pings):
 *
 * - frames are measured from their headers as they arrive: a message over the limit (a few KB
 *   before the socket authenticates, about server.events.maximum_size_bytes after) closes the
 *   socket with 1009 before its payload is passed on, so it is never buffered;
 * - a socket that has not authenticated within server.api.websockets.auth_timeout is closed;
 * - the server pings every server.api.websockets.ping_interval, and a client that sent nothing
 *   since the previous ping is disconnected, so a vanished client gives its slot back;
 * - reading can be paused while the server is behind with the client's messages.
 *
 * Closing writes the close frame itself and ends the connection, destroying it shortly after if
 * the client does not close its side, so a closed socket holds nothing for long.
 */
import { Redacted } from "effect"
import type { Duplex } from "node:stream"
import type { SettingsValue } from "../settings/settings.ts"

/** Bytes a client may send before it authenticates, beside the length of the auth string itself. */
export const PRE_AUTH_BYTES = 8192
/** Room beside server.events.maximum_size_bytes for the JSON around an event and its whitespace. */
export const MESSAGE_SLACK_BYTES = 65536
/** How long a closed socket waits for the client to close its side before it is destroyed. */
const CLOSE_GRACE_MS = 5000

export const MESSAGE_TOO_BIG = 1009
export const POLICY_VIOLATION = 1008

export interface SocketLimits {
  /** Milliseconds to authenticate in, from the handshake (0: no limit). */
  readonly authTimeoutMs: number
  /** Bytes a client may send before it authenticates. */
  readonly preAuthBytes: number
  /** Largest message after authentication. */
  readonly maxMessageBytes: number
  /** Milliseconds between pings (0: no pings). */
  readonly pingIntervalMs: number
}

export const socketLimits = (settings: SettingsValue): SocketLimits => {
  const { api, events } = settings.server
  const authString = api.auth_string
  return {
    authTimeoutMs: Math.round(api.websockets.auth_timeout * 1000),
    // The auth message carries the auth string, perhaps with every character escaped.
    preAuthBytes: PRE_AUTH_BYTES + (authString === null ? 0 : 6 * Buffer.byteLength(Redacted.value(authString))),
    maxMessageBytes: events.maximum_size_bytes + MESSAGE_SLACK_BYTES,
    pingIntervalMs: Math.round(api.websockets.ping_interval * 1000)
  }
}

/**
 * A close reason is at most 123 bytes: the reason's first characters that fit (whole code points).
 * Linear in what is kept, however long the reason (it may quote a whole rejected message).
 */
export const closeReason = (reason: string) => {
  let out = ""
  let bytes = 0
  for (const character of reason) {
    bytes += Buffer.byteLength(character)
    if (bytes > 123) break
    out += character
  }
  return out
}

/** A server-to-client close frame (unmasked). */
const closeFrame = (code: number, reason: string) => {
  const text = Buffer.from(closeReason(reason))
  const frame = Buffer.alloc(4 + text.length)
  frame[0] = 0x88
  frame[1] = 2 + text.length
  frame.writeUInt16BE(code, 2)
  text.copy(frame, 4)
  return frame
}

const PING_FRAME = Buffer.from([0x89, 0x00])

/**
 * Follows the client's frames across chunks by their headers (RFC 6455 §5.2) and reports a data
 * message whose declared length goes over the limit, as soon as the header that says so arrives.
 * The platform's websocket server negotiates no compression, so a frame's length is its payload's.
 */
class FrameMeter {
  private readonly header = Buffer.alloc(14)
  private headerLength = 0
  private remaining = 0
  private messageBytes = 0

  /** The length of the message that goes over `limit` in `chunk`, if one does. */
  feed(chunk: Buffer, limit: number): number | undefined {
    let i = 0
    while (i < chunk.length) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, chunk.length - i)
        this.remaining -= take
        i += take
        continue
      }
      this.header[this.headerLength++] = chunk[i++]!
      if (this.headerLength < 2) continue
      const short = this.header[1]! & 0x7f
      const needed = 2 + (short === 126 ? 2 : short === 127 ? 8 : 0) + (this.header[1]! & 0x80 ? 4 : 0)
      if (this.headerLength < needed) continue
      const length = short === 126
        ? this.header.readUInt16BE(2)
        : short === 127
        ? Number(this.header.readBigUInt64BE(2))
        : short
      const opcode = this.header[0]! & 0x0f
      const fin = (this.header[0]! & 0x80) !== 0
      this.headerLength = 0
      this.remaining = length
      // Control frames (close, ping, pong) are not part of a message; the library bounds them.
      if (opcode >= 8) continue
      const total = (opcode === 0 ? this.messageBytes : 0) + length
      if (total > limit) return total
      this.messageBytes = fin ? 0 : total
    }
    return undefined
  }
}

const guards = new WeakMap<Duplex, SocketGuard>()

/** The guard of a socket that has one. */
export const guardOf = (socket: Duplex): SocketGuard | undefined => guards.get(socket)

export class SocketGuard {
  /** Puts `socket` under `limits` from now on: call it before the websocket library reads from it. */
  static attach(socket: Duplex, limits: SocketLimits, onAuthenticated: () => void = () => {}): SocketGuard {
    const guard = new SocketGuard(socket, limits, onAuthenticated)
    guards.set(socket, guard)
    return guard
  }

  private readonly meter = new FrameMeter()
  private readonly held: Array<Buffer> = []
  private readonly forward: (chunk: Buffer) => boolean
  private readonly write: (frame: Buffer) => boolean
  private readonly timers = new Set<NodeJS.Timeout>()
  private isAuthenticated = false
  private isUpgraded = false
  private isPaused = false
  private isClosing = false
  private received = 0
  private heard = true

  private constructor(
    readonly socket: Duplex,
    private readonly limits: SocketLimits,
    private readonly onAuthenticated: () => void
  ) {
    // Every chunk goes through the guard before the library's "data" listener sees it. Wrapping
    // emit, rather than listening, leaves the socket paused until the library starts reading.
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: Array<unknown>) => boolean
    this.forward = (chunk) => emit("data", chunk)
    socket.emit = ((event: string | symbol, ...args: Array<unknown>) =>
      event === "data" ? this.arrived(args[0] as Buffer) : emit(event, ...args)) as Duplex["emit"]
    // Once the guard has sent its close frame, what the library still writes (its own close frame
    // when the session ends) is dropped rather than written after the end.
    const write = socket.write.bind(socket) as (...args: Array<unknown>) => boolean
    this.write = (frame) => write(frame)
    socket.write = ((...args: Array<unknown>) => {
      if (!this.isClosing) return write(...args)
      const callback = args.find((arg) => typeof arg === "function") as (() => void) | undefined
      if (callback !== undefined) process.nextTick(callback)
      return true
    }) as Duplex["write"]
    socket.once("close", () => this.stopTimers())
    if (limits.authTimeoutMs > 0) {
      this.after(limits.authTimeoutMs, () => {
        if (!this.isAuthenticated) this.close(POLICY_VIOLATION, `No authentication within ${limits.authTimeoutMs / 1000} s`)
      })
    }
  }

  get closing(): boolean {
    return this.isClosing
  }

  /** Bytes written to the client and not yet taken by the network. */
  get backlog(): number {
    return this.socket.writableLength
  }

  /** The handshake is answered (101): frames may be written, and pings start. */
  upgraded(): void {
    if (this.isUpgraded) return
    this.isUpgraded = true
    if (this.limits.pingIntervalMs > 0) {
      const timer = setInterval(() => this.ping(), this.limits.pingIntervalMs)
      timer.unref()
      this.timers.add(timer)
    }
  }

  /** The client authenticated: the larger message limit applies, and the auth deadline no longer does. */
  authenticated(): void {
    if (this.isAuthenticated) return
    this.isAuthenticated = true
    this.onAuthenticated()
  }

  /** Stops reading from the client until `resumeReading` (what arrives meanwhile waits here). */
  pauseReading(): void {
    this.isPaused = true
    this.socket.pause()
  }

  resumeReading(): void {
    if (!this.isPaused) return
    this.isPaused = false
    while (this.held.length > 0 && !this.isPaused) this.pass(this.held.shift()!)
    if (!this.isPaused && !this.isClosing) this.socket.resume()
  }

  /**
   * Calls `done(true)` once at most `bytes` wait to be taken by the client, or `done(false)` if more
   * still do after `ms` or the connection is gone. Returns a function that cancels the wait.
   */
  waitForRoom(bytes: number, ms: number, done: (room: boolean) => void): () => void {
    const started = Date.now()
    const check = () => {
      if (this.socket.destroyed) return finish(false)
      if (this.backlog <= bytes) return finish(true)
      if (Date.now() - started >= ms) return finish(false)
    }
    const timer = setInterval(check, Math.max(1, Math.min(50, ms / 4)))
    timer.unref()
    const finish = (room: boolean) => {
      clearInterval(timer)
      done(room)
    }
    check()
    return () => clearInterval(timer)
  }

  /** Sends a close frame and ends the connection; it is destroyed if the client does not close its side soon. */
  close(code: number, reason: string): void {
    if (this.isClosing) return
    this.isClosing = true
    this.held.length = 0
    this.stopTimers()
    if (this.isUpgraded && this.socket.writable) {
      this.write(closeFrame(code, reason))
      this.socket.end()
      this.after(CLOSE_GRACE_MS, () => this.socket.destroy())
    } else {
      this.socket.destroy()
    }
  }

  private arrived(chunk: Buffer): boolean {
    this.heard = true
    // Data flows only once the library reads the socket, which it does after writing the 101.
    this.isUpgraded = true
    if (this.isClosing) return false
    if (this.isPaused) {
      this.held.push(chunk)
      // The library resumes the socket when its own buffer drains: pause it again.
      this.socket.pause()
      return true
    }
    return this.pass(chunk)
  }

  private pass(chunk: Buffer): boolean {
    const limit = this.isAuthenticated ? this.limits.maxMessageBytes : this.limits.preAuthBytes
    const tooBig = this.meter.feed(chunk, limit)
    if (tooBig !== undefined) {
      this.close(MESSAGE_TOO_BIG, `Message of ${tooBig} bytes is over the limit of ${limit} bytes`)
      return false
    }
    if (!this.isAuthenticated) {
      this.received += chunk.length
      if (this.received > limit) {
        this.close(MESSAGE_TOO_BIG, `More than ${limit} bytes sent before authenticating`)
        return false
      }
    }
    return this.forward(chunk)
  }

  private ping(): void {
    if (this.isClosing) return
    // A client the server is not reading from cannot be heard: it is not judged then.
    if (!this.heard && !this.isPaused) {
      this.isClosing = true
      this.stopTimers()
      this.socket.destroy()
      return
    }
    this.heard = false
    this.write(PING_FRAME)
  }

  private after(ms: number, f: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      f()
    }, ms)
    timer.unref()
    this.timers.add(timer)
  }

  private stopTimers(): void {
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
  }
}
