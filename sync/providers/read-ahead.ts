/**
 * Hands every page of a provider list to `take`, in order, reading the pages after it (`next`, null
 * after the last) while `take` applies the current one, so reading and writing overlap. Up to
 * `depth` pages are read ahead, one request at a time (each page names the next): while a long
 * `take` runs, the reads go on. The read of the page after a page is asked for before that page is
 * taken. A page `take` did not accept is never taken past: a failure stops the list where the
 * checkpoint stands, no read starts after it, and what was read ahead is dropped. Answers the last page.
 */
export async function takePagesReadingAhead<Page> (first: Page, next: (page: Page) => Promise<Page> | null, take: (page: Page) => Promise<void>, depth = 1): Promise<Page> {
  /** The pages read ahead, in order; null after the last. */
  const ahead: Array<Promise<Page | null>> = []
  // The last read asked for, and its page once it answered (the read after it then starts at once).
  let lastRead: Promise<Page | null> = Promise.resolve(first)
  let lastAnswer: { page: Page | null } | null = { page: first }
  // Once a page is refused, no read starts; those under way end unheard.
  let refused = false
  const readOneMore = (): void => {
    const answered = lastAnswer
    const read: Promise<Page | null> = answered === null
      ? lastRead.then((page) => page === null || refused ? null : next(page) ?? null)
      : answered.page === null ? Promise.resolve(null) : next(answered.page) ?? Promise.resolve(null)
    lastAnswer = null
    lastRead = read
    // Also meets a failure of a read that is dropped, which must not surface unhandled.
    read.then((page) => { if (lastRead === read) lastAnswer = { page } }, () => {})
    ahead.push(read)
  }
  for (let count = 0; count < Math.max(1, depth); count++) readOneMore()
  let page = first
  for (;;) {
    try {
      await take(page)
    } catch (error) {
      refused = true
      throw error
    }
    const following = await (ahead.shift() as Promise<Page | null>)
    if (following === null) return page
    readOneMore()
    page = following
  }
}
