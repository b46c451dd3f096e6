# Handle, refcount, closure and event suites.
fm_add_test(test_handle memory/test_handle.c memory_handle)
fm_add_test(test_refcount memory/test_refcount.c memory_refcount)
fm_add_test(test_closure memory/test_closure.c memory_closure)
fm_add_test(test_event memory/test_event.c memory_event)
