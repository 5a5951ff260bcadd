/**
 * Hands every page of a provider list to `take`, in order, reading the next page (`next`, null
 * after the last) while `take` applies the current one, so reading and writing overlap. A page
 * `take` did not accept is never read past: a failure stops the list where the checkpoint stands.
 * Answers the last page.
 */
export async function takePagesReadingAhead<Page> (first: Page, next: (page: Page) => Promise<Page> | null, take: (page: Page) => Promise<void>): Promise<Page> {
  let page = first
  for (;;) {
    const ahead = next(page)
    try {
      await take(page)
    } catch (error) {
      // The page read ahead is not wanted any more; its own failure must not surface unhandled.
      ahead?.catch(() => {})
      throw error
    }
    if (ahead === null) return page
    page = await ahead
  }
}
