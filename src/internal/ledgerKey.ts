/**
 * Canonical JSON and hashing for idempotency keys and payload fingerprints.
 *
 * @internal
 */
import { createHash } from "node:crypto"

const hasToJSON = (value: object): value is { toJSON: () => unknown } =>
  typeof (value as { toJSON?: unknown }).toJSON === "function"

/**
 * JSON with object keys sorted by UTF-16 code units at every depth (the
 * ordering of RFC 8785); numbers and strings are written as `JSON.stringify`
 * writes them, which is what RFC 8785 prescribes. Values JSON cannot hold
 * (`undefined`, functions, symbols) are dropped from objects and become
 * `null` in arrays, as with `JSON.stringify`.
 */
export const canonicalJson = (value: unknown): string => write(value) ?? "null"

const write = (input: unknown): string | undefined => {
  const value = input !== null && typeof input === "object" && hasToJSON(input) ? input.toJSON() : input
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
      if (Array.isArray(value)) return `[${value.map((item) => write(item) ?? "null").join(",")}]`
      const record = value as Record<string, unknown>
      const fields: Array<string> = []
      for (const key of Object.keys(record).sort()) {
        const written = write(record[key])
        if (written !== undefined) fields.push(`${JSON.stringify(key)}:${written}`)
      }
      return `{${fields.join(",")}}`
    }
    default:
      return undefined
  }
}

/** Lower-case hex SHA-256 of the UTF-8 bytes of `text`. */
export const sha256Hex = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")
