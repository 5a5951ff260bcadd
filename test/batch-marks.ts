/** The name of the test that ends each file of a batch (test/batch.ts), followed by the file. */
export const FILE_END_PREFIX = 'end of file '
