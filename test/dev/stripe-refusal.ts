/** What a Stripe call was refused with (the package's error: type, statusCode, param). */
export async function refusal (call: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await call
  } catch (error) {
    return { ...(error as object), message: (error as Error).message }
  }
  throw new Error('the call was not refused')
}
