# Sourced (from the checkout's root) by the scripts that run against the shared test stack: `test_stack_up`
# starts it unless it already runs; `test_stack_release`, from the script's EXIT trap, stops it again only
# when this script started it, so a stack someone else runs is left alone.
started_stack=0
test_stack_up() {
  if ! bash deploy/local/stack.sh status test >/dev/null 2>&1; then
    started_stack=1
    bash deploy/local/stack.sh up test
  fi
}
test_stack_release() {
  if [[ $started_stack == 1 ]]; then bash deploy/local/stack.sh down test >/dev/null 2>&1 || true; fi
}
