/**
 * The check of a card's signatures against the keys the user trusts, before
 * a transport is chosen from it.
 *
 * The SDK's `verifyAgentCardSignature` hands the card's own `jku` to the key
 * resolver, accepts any algorithm its key allows and writes each failed
 * attempt to `console.debug`; so the same check is made here with `jose`, on
 * the SDK's own canonical form (`canonicalizeAgentCard`), keeping its rule
 * that the protected header names `kid`, `typ` and `alg`.
 *
 * @internal
 */
import { AgentCard, canonicalizeAgentCard } from "@a2a-js/sdk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as jose from "jose"
import type { Trust, TrustedKey } from "../../../RemoteAgent.js"
import { asymmetric } from "../../wire/jws.js"
import { CardContentError } from "../call/classify.js"

/** Every trusted key is a public one: no symmetric algorithm, nor `none`. */
const algorithms = asymmetric

type Lookup = (header: jose.ProtectedHeaderParameters) => Effect.Effect<jose.KeyInput, string>

/** The keys of a JWKS, looked up as jose does: by `kid`, `kty` and `alg`. */
const fromSet = (jwks: jose.JSONWebKeySet): Lookup => {
  const set = jose.createLocalJWKSet(jwks)
  return (header) =>
    Effect.tryPromise({
      try: () => set(header),
      catch: (error) => `no trusted key has kid "${header.kid}" for ${header.alg} (${(error as Error).message})`
    })
}

/** @internal */
export const isJwks = (value: unknown): value is jose.JSONWebKeySet =>
  typeof value === "object" && value !== null && Array.isArray((value as { keys?: unknown }).keys)

/** The trusted JWKS at `url`, fetched once; a failure is the resolution's `Unreachable`. */
const fetchJwks = (url: string, base: typeof fetch) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await base(url, { signal, headers: { accept: "application/json" } })
      if (!response.ok) throw new Error(`HTTP ${response.status}`)
      const body: unknown = await response.json()
      if (!isJwks(body)) throw new Error("the body is not a JWKS (an object with a keys array)")
      return body
    },
    catch: (error) => `the trusted JWKS at ${url} could not be read: ${(error as Error).message}`
  })

/**
 * How keys are found for `trust`: a JWKS URL is fetched here, once, so that
 * no card, and no card's `jku`, decides where keys come from.
 *
 * @internal
 */
export const lookup = (trust: Trust, base: typeof fetch): Effect.Effect<Lookup, string> => {
  if ("keys" in trust) return Effect.succeed(fromSet({ keys: [...trust.keys] }))
  if ("jwks" in trust) return Effect.map(fetchJwks(String(trust.jwks), base), fromSet)
  const resolveKey = trust.resolve
  return Effect.succeed((header): Effect.Effect<jose.KeyInput, string> =>
    resolveKey(header).pipe(
      Effect.mapError(() => `the trust resolver found no key for kid "${header.kid}"`),
      Effect.flatMap((key): Effect.Effect<jose.KeyInput, string> =>
        isJwk(key)
          ? Effect.tryPromise({
            try: () => jose.importJWK(key, header.alg),
            catch: (error) =>
              `the trust resolver's key for kid "${header.kid}" cannot be used: ${(error as Error).message}`
          })
          : Effect.succeed(key)
      ),
      Effect.catchAllDefect((defect) =>
        Effect.fail(`the trust resolver died for kid "${header.kid}": ${String(defect)}`)
      )
    )
  )
}

const isJwk = (key: TrustedKey): key is jose.JWK =>
  typeof key === "object" && key !== null && typeof (key as { kty?: unknown }).kty === "string"

type Refusal = { readonly reason: "InvalidSignature" | "UntrustedSigner"; readonly detail: string }

/** One signature entry of the card, checked against the payload. */
const attempt = (
  lookupKey: Lookup,
  payload: string,
  entry: unknown
): Effect.Effect<void, Refusal> =>
  Effect.gen(function*() {
    const signature = entry as { protected?: unknown; signature?: unknown; header?: unknown }
    if (typeof signature?.protected !== "string" || typeof signature.signature !== "string") {
      return yield* Effect.fail<Refusal>({
        reason: "InvalidSignature",
        detail: "a signature entry lacks protected or signature"
      })
    }
    const header = yield* Effect.try({
      try: () => jose.decodeProtectedHeader({ protected: signature.protected }),
      catch: (): Refusal => ({ reason: "InvalidSignature", detail: "a protected header is not base64url JSON" })
    })
    if (!header.kid || !header.typ || !header.alg) {
      return yield* Effect.fail<Refusal>({
        reason: "InvalidSignature",
        detail: `the protected header lacks kid, typ or alg (as the SDK requires)`
      })
    }
    if (!algorithms.includes(header.alg)) {
      return yield* Effect.fail<Refusal>({
        reason: "InvalidSignature",
        detail: `alg ${header.alg} is refused: only asymmetric signatures (${
          algorithms.join(", ")
        }) by a trusted public key are accepted`
      })
    }
    // The card's jku is never followed: keys come from the trust configuration only.
    const key = yield* Effect.mapError(lookupKey(header), (detail): Refusal => ({ reason: "UntrustedSigner", detail }))
    yield* Effect.tryPromise({
      try: () =>
        jose.flattenedVerify(
          {
            payload,
            protected: signature.protected as string,
            signature: signature.signature as string,
            ...(typeof signature.header === "object" && signature.header !== null
              ? { header: signature.header as jose.JWSHeaderParameters }
              : {})
          },
          key,
          { algorithms: [...algorithms] }
        ),
      catch: (error): Refusal => ({
        reason: "InvalidSignature",
        detail: `the signature by kid "${header.kid}" does not verify over this card (${(error as Error).message})`
      })
    })
  })

/**
 * The card to route by when `raw` may be used: the decoded, covered card
 * (`AgentCard.fromJSON(raw)`) when it is signed by a trusted key, `normalized`
 * (the SDK's reading) when it is unsigned and a signature is not required.
 * A refusal is a `CardContentError` with its reason; the attempts are logged
 * once, at debug.
 *
 * @internal
 */
export const verify = (
  lookupKey: Lookup,
  required: boolean,
  raw: unknown,
  normalized: AgentCard
): Effect.Effect<AgentCard, CardContentError> =>
  Effect.suspend(() => {
    const signatures = (raw as { signatures?: unknown } | null)?.signatures
    if (!Array.isArray(signatures) || signatures.length === 0) {
      return required
        ? Effect.fail(
          new CardContentError("Unsigned", "the card carries no signature and the trust option requires one")
        )
        : Effect.succeed(normalized)
    }
    const covered = AgentCard.fromJSON(raw)
    // A v0.3-shaped card: its endpoints are fields the v1.0 canonical form drops, so no signature covers them.
    if (covered.supportedInterfaces.length === 0 && (normalized.supportedInterfaces ?? []).length > 0) {
      return Effect.fail(
        new CardContentError(
          "InvalidSignature",
          "the card is signed in v0.3 form: its endpoints (url, preferredTransport, additionalInterfaces) are outside the v1.0 canonical form, so no signature covers them, and a card signed in v0.3 form never verifies after translation to v1.0; ask its owners to serve a signed v1.0 card (supportedInterfaces)"
        )
      )
    }
    const payload = jose.base64url.encode(canonicalizeAgentCard(raw as AgentCard))
    return Effect.forEach(signatures, (entry) => Effect.either(attempt(lookupKey, payload, entry))).pipe(
      Effect.flatMap((results) => {
        if (results.some(Either.isRight)) return Effect.succeed(covered)
        const refusals = results.flatMap((r) => (Either.isLeft(r) ? [r.left] : []))
        const reason = refusals.some((r) => r.reason === "InvalidSignature") ? "InvalidSignature" : "UntrustedSigner"
        const detail = refusals.map((r) => r.detail).join("; ")
        return Effect.logDebug(`the card's ${refusals.length} signature(s) were refused: ${detail}`).pipe(
          Effect.zipRight(Effect.fail(new CardContentError(reason, detail)))
        )
      })
    )
  })
