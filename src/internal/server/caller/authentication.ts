/**
 * Who calls the server: the application's `authenticate`, run at each
 * transport's edge before anything else, and the SDK `User` that carries
 * the caller to the task store's owner scoping.
 *
 * @internal
 */
import type { AgentCard } from "@a2a-js/sdk"
import { resolveUserScope, ServerCallContext, UnauthenticatedUser, type User } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { type Authenticator, type Caller, type Request, type Scheme } from "../../authentication/authenticator.js"
import * as internalCauses from "../../observability/causes.js"
import * as internalMetrics from "../../observability/metrics.js"
import * as ErrorId from "../../wire/errorId.js"

export {
  type Authenticator,
  type Caller,
  type Request,
  type Scheme,
  schemeOf,
  Unauthenticated
} from "../../authentication/authenticator.js"

/** The headers always taken to carry credentials. @internal */
export const alwaysCredentials: ReadonlyArray<string> = ["authorization", "proxy-authorization", "cookie", "x-api-key"]

/** Every header `authenticate` reads credentials from, in lower case. @internal */
export const credentialHeadersOf = (authenticate: Authenticator<unknown> | undefined): ReadonlyArray<string> =>
  Array.from(
    new Set([...alwaysCredentials, ...(authenticate?.credentialHeaders ?? []).map((name) => name.toLowerCase())])
  )

/** The SDK user of an authenticated caller: its `userName`, the owner of its tasks, is the caller's id. @internal */
export class CallerUser implements User {
  constructor(readonly caller: Caller, readonly credentialHeaders: ReadonlyArray<string> = alwaysCredentials) {}
  get isAuthenticated(): boolean {
    return true
  }
  get userName(): string {
    return this.caller.id
  }
}

/** The tenant and owner a call's tasks are kept under, as every store of ours scopes them. @internal */
export const scopeOf = (context: ServerCallContext): { readonly tenant: string; readonly owner: string } => ({
  tenant: context.tenant ?? "",
  owner: resolveUserScope(context)
})

/**
 * A context in the scope of `owner` (the SDK's `resolveUserScope` of a
 * caller) within `tenant`, for work done after its caller is gone: a sweep,
 * a delivery taken up after a restart, a forgotten task's push configs.
 *
 * @internal
 */
export const ownerContext = (tenant: string, owner: string): ServerCallContext =>
  new ServerCallContext({
    user: owner === resolveUserScope(new ServerCallContext({ user: new UnauthenticatedUser() }))
      ? new UnauthenticatedUser()
      : new CallerUser({ id: owner, name: owner }),
    ...(tenant === "" ? {} : { tenant })
  })

/** The caller of a call, when it was authenticated. @internal */
export const callerOf = (context: ServerCallContext | undefined): Caller | undefined => {
  const user = context?.user
  return user instanceof CallerUser ? user.caller : undefined
}

/** `headers` without the credentials the call was authenticated with: the agent has its caller instead. @internal */
export const withoutCredentials = <H extends Readonly<Record<string, unknown>>>(
  headers: H,
  context: ServerCallContext | undefined
): H => {
  const user = context?.user
  if (!(user instanceof CallerUser)) return headers
  const kept: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!user.credentialHeaders.includes(name.toLowerCase())) kept[name] = value
  }
  return kept as H
}

/** Who a bound per caller counts: the authenticated caller, or else the peer's address. @internal */
export const loadKey = (user: User | undefined, remoteAddress: string): string =>
  user?.isAuthenticated === true ? user.userName : remoteAddress

/** Why a request was refused, as each transport answers it. @internal */
export interface Refusal {
  readonly _tag: "Refusal"
  /** What the caller is told: nothing of why its credential failed. */
  readonly message: string
  readonly challenge: string
}

/** A request not let in: refused, or met by an authenticator that broke (a 500, its error id in `message`). @internal */
export type Refused = Refusal | { readonly _tag: "Broken"; readonly message: string }

/** The outcome of a check: the caller's SDK user, or why not. @internal */
export type Checked = User | Refused

/** @internal */
export const isUser = (checked: Checked): checked is User => !("_tag" in checked)

/**
 * The edge's check, run with the server's runtime. A refusal is logged (its
 * reason and the authenticator's message, never the credential) and
 * counted; an authenticator that dies, or answers a caller without an id,
 * is an internal error under an error id.
 *
 * @internal
 */
export type Gate = (request: Request) => Promise<Checked>

const defaultChallenge = "Bearer"

/** @internal */
export const makeGate = <R>(authenticate: Authenticator<R>, agent: string): Effect.Effect<Gate, never, R> =>
  Effect.map(Effect.runtime<R>(), (runtime) => {
    const run = Runtime.runPromiseExit(runtime)
    const unauthenticated = internalMetrics.tagged(internalMetrics.serverUnauthenticated, { agent })
    const challenge = authenticate.scheme?.challenge ?? defaultChallenge
    const credentials = credentialHeadersOf(authenticate)
    const broken = (cause: Cause.Cause<unknown>): Checked => {
      const errorId = ErrorId.make()
      Runtime.runSync(runtime)(internalCauses.logErrorOffSpan("Authentication failed unexpectedly", {
        errorId,
        cause: internalCauses.renderCause(cause)
      }))
      return { _tag: "Broken", message: ErrorId.internalErrorText(errorId) }
    }
    return (request) =>
      run(Effect.suspend(() => authenticate(request))).then((exit): Checked => {
        if (Exit.isSuccess(exit)) {
          const caller = exit.value
          return typeof caller?.id === "string" && caller.id !== ""
            ? new CallerUser(caller, credentials)
            : broken(Cause.die(new Error("authenticate answered a caller without an id")))
        }
        const failure = Option.getOrUndefined(Cause.failureOption(exit.cause))
        if (failure === undefined) return broken(exit.cause)
        unauthenticated.unsafeUpdate(1, [])
        Runtime.runSync(runtime)(
          Effect.logWarning("Request refused: not authenticated").pipe(
            Effect.annotateLogs({
              reason: failure.reason,
              detail: failure.message,
              transport: request.transport,
              remoteAddress: request.remoteAddress ?? ""
            })
          )
        )
        return {
          _tag: "Refusal",
          message: failure.reason === "MissingCredentials" ? "Authentication required." : "Invalid credentials.",
          challenge
        }
      }, (error) => broken(Cause.die(error)))
  })

/** The card with what the authenticator declares, unless the card declares its own. @internal */
export const declare = (card: AgentCard, scheme: Scheme | undefined): AgentCard =>
  scheme === undefined || Object.keys(card.securitySchemes ?? {}).length > 0
    ? card
    : { ...card, securitySchemes: scheme.securitySchemes, securityRequirements: scheme.securityRequirements }

/**
 * Whether a task a store did not find for the caller of `context` is held
 * by another caller: only for `a2a.server.forbidden`, never for the answer.
 * The native stores tell (`heldElsewhere`); a user's own SDK store cannot.
 *
 * @internal
 */
export type HeldElsewhere = (taskId: string, context: ServerCallContext) => Effect.Effect<boolean, unknown>

/**
 * What checks, after the answer, a task not found for an authenticated
 * caller against the other callers' tasks: a hit is counted in
 * `a2a.server.forbidden` and logged as a warning. Undefined without
 * `heldElsewhere`. The handler's ownership stage calls it
 * (`handler/stages.ts` `noticingMisses`).
 *
 * @internal
 */
export const missWatch = (
  heldElsewhere: HeldElsewhere | undefined,
  agent: string
): Effect.Effect<((taskId: string, context: ServerCallContext) => void) | undefined> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    if (heldElsewhere === undefined) return undefined
    const forbidden = internalMetrics.tagged(internalMetrics.serverForbidden, { agent })
    const runFork = Runtime.runFork(runtime)
    const check = (taskId: string, context: ServerCallContext, caller: Caller) =>
      Effect.flatMap(heldElsewhere(taskId, context), (held) =>
        held
          ? Effect.zipRight(
            Effect.sync(() => forbidden.unsafeUpdate(1, [])),
            Effect.logWarning("Request on another caller's task, answered as not found").pipe(
              Effect.annotateLogs({ caller: caller.id, taskId })
            )
          )
          : Effect.void).pipe(Effect.ignore)
    return (taskId, context) => {
      const caller = callerOf(context)
      // Not awaited: the answer does not wait for the count.
      if (caller !== undefined) runFork(check(taskId, context, caller))
    }
  })
