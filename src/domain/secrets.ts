/**
 * Comparing secrets (tokens, credentials) in time that depends neither on where they differ nor on
 * their lengths: both sides are hashed first, and the equal-length digests compared with
 * timingSafeEqual.
 */
import { createHash, timingSafeEqual } from "node:crypto"

/** The SHA-256 digest of `secret`, for comparing with `sameDigest`. */
export const digestOf = (secret: string | Buffer): Buffer => createHash("sha256").update(secret).digest()

/** Whether `candidate` hashes to `digest` (made with `digestOf`), in constant time. */
export const sameDigest = (candidate: string | Buffer, digest: Buffer): boolean => timingSafeEqual(digestOf(candidate), digest)

export const sameSecret = (a: string, b: string): boolean => sameDigest(a, digestOf(b))
