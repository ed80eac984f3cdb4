/**
 * The JWT authenticator: a bearer token verified with `jose` against a
 * JWKS (remote or local), its issuer, audience, expiry and algorithm.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { createLocalJWKSet, createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from "jose"
import type * as Authentication from "../../Authentication.js"
import * as jws from "../wire/jws.js"
import * as internalAuthentication from "./authenticator.js"

/** Asymmetric only: with a public key, `none` and `HS*` are how tokens get forged. */
const asymmetric: ReadonlySet<string> = new Set(jws.asymmetric)

/**
 * jose's codes for a token that is not good: the caller's fault. Any other
 * failure (the JWKS not fetched, not parsed, a key that does not import) is
 * the server's, and a defect.
 */
const refusedCodes: ReadonlySet<string> = new Set([
  "ERR_JWT_EXPIRED",
  "ERR_JWT_CLAIM_VALIDATION_FAILED",
  "ERR_JWT_INVALID",
  "ERR_JWS_INVALID",
  "ERR_JWS_SIGNATURE_VERIFICATION_FAILED",
  "ERR_JOSE_ALG_NOT_ALLOWED",
  "ERR_JOSE_NOT_SUPPORTED",
  "ERR_JWKS_NO_MATCHING_KEY",
  "ERR_JWKS_MULTIPLE_MATCHING_KEYS"
])

const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i

// With several issuers, two of them may each have a user of one `sub`: the id names the issuer too.
const defaultCallerOf = (severalIssuers: boolean) => (payload: JWTPayload): internalAuthentication.Caller | undefined =>
  typeof payload.sub === "string" && payload.sub !== ""
    ? {
      id: severalIssuers ? `${payload.iss} ${payload.sub}` : payload.sub,
      name: typeof payload["name"] === "string" ? payload["name"] : payload.sub
    }
    : undefined

const nonEmpty = (value: string | ReadonlyArray<string>): boolean =>
  typeof value === "string" ? value !== "" : value.length > 0 && value.every((each) => each !== "")

/** jose's code and, for a claim, which one; its messages name claims, never values of the token. */
const why = (error: errors.JOSEError): string =>
  error instanceof errors.JWTClaimValidationFailed || error instanceof errors.JWTExpired
    ? `${error.code} ${error.claim}: ${error.message}`
    : `${error.code}: ${error.message}`

/**
 * Throws on options that would let a forged token in or could never let
 * one in: both or neither of `jwks` and `keys`, an empty issuer or
 * audience, no algorithms or one that is not asymmetric.
 *
 * @internal
 */
export const make = (options: Authentication.JwtOptions): internalAuthentication.Authenticator => {
  const { jwks, keys } = options
  if ((jwks === undefined) === (keys === undefined)) {
    throw new Error("Authentication.jwt: give exactly one of jwks (a URL) and keys (a JWKS)")
  }
  if (!nonEmpty(options.issuer)) throw new Error("Authentication.jwt: issuer is empty")
  if (!nonEmpty(options.audience)) throw new Error("Authentication.jwt: audience is empty")
  if (options.algorithms.length === 0) throw new Error("Authentication.jwt: algorithms is empty")
  const refused = options.algorithms.filter((alg) => !asymmetric.has(alg))
  if (refused.length > 0) {
    throw new Error(
      `Authentication.jwt: algorithms ${refused.join(", ")} refused; only ${
        Array.from(asymmetric).join(", ")
      } are allowed`
    )
  }
  // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- exactly one of jwks and keys is given (checked above)
  const keySet = jwks !== undefined ? createRemoteJWKSet(new URL(jwks)) : createLocalJWKSet(keys!)
  const verifyOptions = {
    issuer: typeof options.issuer === "string" ? options.issuer : [...options.issuer],
    audience: typeof options.audience === "string" ? options.audience : [...options.audience],
    algorithms: [...options.algorithms],
    clockTolerance: Duration.toSeconds(Duration.decode(options.clockTolerance ?? Duration.seconds(5))),
    requiredClaims: ["exp"]
  }
  const callerOf = options.callerOf ?? defaultCallerOf(typeof options.issuer !== "string" && options.issuer.length > 1)
  const invalid = (message: string) =>
    new internalAuthentication.Unauthenticated({ reason: "InvalidCredentials", message })

  const authenticate: internalAuthentication.Authenticator = (request) =>
    Effect.suspend(() => {
      const authorization = request.headers["authorization"]
      if (authorization === undefined || authorization === "") {
        return Effect.fail(
          new internalAuthentication.Unauthenticated({
            reason: "MissingCredentials",
            message: "no authorization header"
          })
        )
      }
      const token = bearer.exec(authorization)?.[1]
      if (token === undefined) return Effect.fail(invalid("the authorization header is not Bearer <token>"))
      return Effect.tryPromise({
        try: () => jwtVerify(token, keySet, verifyOptions),
        catch: (error) => error
      }).pipe(
        Effect.catchAll((error) =>
          error instanceof errors.JOSEError && refusedCodes.has(error.code)
            ? Effect.fail(invalid(why(error)))
            : Effect.die(error)
        ),
        Effect.flatMap(({ payload }) => {
          const caller = callerOf(payload)
          return caller === undefined
            ? Effect.fail(invalid("the token names no caller (no sub claim)"))
            : Effect.succeed(caller)
        })
      )
    })
  return Object.assign(authenticate, {
    scheme: internalAuthentication.schemeOf(
      options.schemeName ?? "bearer",
      {
        scheme: {
          $case: "httpAuthSecurityScheme",
          value: { scheme: "Bearer", bearerFormat: "JWT", description: options.description ?? "" }
        }
      },
      // One challenge answers every refusal, so no RFC 6750 error="invalid_token" for the invalid ones.
      `Bearer realm="a2a"`
    )
  })
}
