/**
 * The executor's hold on a task for one message that continues it (see
 * `EffectAgentExecutor.claim`): none while a run of the task is in
 * progress here (`running`) or another message holds it.
 *
 * @internal
 */

/** @internal */
export const makeClaim = (running: ReadonlyMap<string, unknown>) => {
  const claimed = new Set<string>()
  return (taskId: string): (() => void) | undefined => {
    if (claimed.has(taskId) || running.has(taskId)) return undefined
    claimed.add(taskId)
    let held = true
    return () => {
      if (held) claimed.delete(taskId)
      held = false
    }
  }
}
