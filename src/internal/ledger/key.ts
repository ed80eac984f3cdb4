/**
 * Canonical JSON and hashing for idempotency keys and payload fingerprints.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import type * as Idempotency from "../../Idempotency.js"

const hasToJSON = (value: object): value is { toJSON: () => unknown } =>
  typeof (value as { toJSON?: unknown }).toJSON === "function"

/**
 * JSON with object keys sorted by UTF-16 code units at every depth (the
 * ordering of RFC 8785); numbers and strings are written as `JSON.stringify`
 * writes them, which is what RFC 8785 prescribes. Values JSON cannot hold
 * (`undefined`, functions, symbols) are dropped from objects and become
 * `null` in arrays, as with `JSON.stringify`.
 */
export const canonicalJson = (value: unknown): string => write(value, []) ?? "null"

// Boxed primitives are written as their primitive, as `JSON.stringify` writes them.
const unbox = (value: object): unknown =>
  value instanceof Number || value instanceof String || value instanceof Boolean ? value.valueOf() : value

const write = (input: unknown, ancestors: Array<object>): string | undefined => {
  const value = input !== null && typeof input === "object"
    ? hasToJSON(input) ? input.toJSON() : unbox(input)
    : input
  switch (typeof value) {
    case "string":
      return JSON.stringify(value)
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : "null"
    case "boolean":
      return value ? "true" : "false"
    case "bigint":
      // A bigint has no JSON form; writing it as a string would make 1n and "1" collide.
      throw new TypeError("canonicalJson: a bigint cannot be written as JSON")
    case "object": {
      if (value === null) return "null"
      if (ancestors.includes(value)) throw new TypeError("canonicalJson: a cyclic value cannot be written as JSON")
      ancestors.push(value)
      let text: string
      if (Array.isArray(value)) {
        // `Array.from` visits holes too: a sparse array is written with nulls, as `JSON.stringify` writes it.
        text = `[${Array.from(value, (item) => write(item, ancestors) ?? "null").join(",")}]`
      } else {
        const record = value as Record<string, unknown>
        const fields: Array<string> = []
        for (const key of Object.keys(record).sort()) {
          const written = write(record[key], ancestors)
          if (written !== undefined) fields.push(`${JSON.stringify(key)}:${written}`)
        }
        text = `{${fields.join(",")}}`
      }
      ancestors.pop()
      return text
    }
    default:
      return undefined
  }
}

/** Lower-case hex SHA-256 of the UTF-8 bytes of `text`. */
const sha256Hex = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

/** A digest of a payload: SHA-256 hex of its canonical JSON. */
export const fingerprint = (payload: unknown): string => sha256Hex(canonicalJson(payload))

export const derivedPrefix = "idem-v1-"

export const deriveKey = (source: Idempotency.KeySource): string =>
  "key" in source
    ? source.key
    : derivedPrefix + fingerprint({ contextId: source.contextId, operation: source.operation, params: source.params })
