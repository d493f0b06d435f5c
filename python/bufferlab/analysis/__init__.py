"""analysis: numbers derived from a run's raw result, step 3 of the pipeline (`derive`, whose
record of a run, `record.DerivedRun`, the store writes as it is), and the mean and confidence
interval over a study's seeds (`aggregate`). The run summary (`summary`), the metric
catalogue (`metrics`, as the engine's `metrics/catalogue.rs` defines it), seed 000's middlebox
monitor (`monitor`) and the packet formats captures are exported in (`pcap`). Nothing here opens
the store or calls the engine."""
