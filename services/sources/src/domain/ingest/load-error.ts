/** The data cannot be loaded; the message is meant for the customer as is. */
export class LoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LoadError';
  }
}
