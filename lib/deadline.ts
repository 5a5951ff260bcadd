/**
 * `work`, or `timedOut()` thrown once `ms` have passed without its answer. The work is not
 * cancelled; its late failure is swallowed, since the caller has moved on.
 */
export async function withDeadline<T> (work: Promise<T>, ms: number, timedOut: () => Error = () => new Error(`no answer within ${ms} ms`)): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  work.catch(() => {})
  try {
    return await Promise.race([work, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(timedOut()) }, ms)
    })])
  } finally {
    clearTimeout(timer)
  }
}
