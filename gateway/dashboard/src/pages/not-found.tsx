import { ButtonLink, Card, EmptyState, PageHeader } from '../components/ui.tsx';
import { useDocumentTitle } from '../hooks.ts';

export function NotFoundPage() {
  useDocumentTitle('Not found');
  return (
    <>
      <PageHeader title="Page not found" />
      <Card>
        <EmptyState
          title="There is nothing at this address"
          icon="?"
          action={
            <ButtonLink to="/" variant="primary">
              Go to the overview
            </ButtonLink>
          }
        >
          The link may be old, or the item was deleted.
        </EmptyState>
      </Card>
    </>
  );
}
